// Attach turns files the user drops, pastes or picks into attachments, and
// attachments into OpenAI content parts: images as image_url data URLs,
// video as video_url data URLs (vLLM's part), audio as input_audio (base64
// WAV or MP3; other audio the browser can decode is converted to 16-bit
// WAV here, since the API takes only those two formats).

/** MAX_BYTES is the largest file accepted: the server's limit per image or video (20 MiB). */
export const MAX_BYTES = 20 << 20;

/** kindOf returns 'image', 'video', 'audio' or '' for a MIME type and file name. */
export function kindOf(mime, name = '') {
  const m = String(mime || '').toLowerCase();
  if (m.startsWith('image/')) return 'image';
  if (m.startsWith('video/')) return 'video';
  if (m.startsWith('audio/')) return 'audio';
  const ext = String(name).toLowerCase().split('.').pop();
  if (['png', 'jpg', 'jpeg', 'gif', 'webp', 'heic', 'heif'].includes(ext)) return 'image';
  if (['mp4', 'mov', 'm4v', 'mkv', 'avi'].includes(ext)) return 'video';
  if (['wav', 'mp3', 'ogg', 'oga', 'opus', 'flac', 'm4a', 'aac', 'webm'].includes(ext)) return 'audio';
  return '';
}

/** audioFormat returns 'wav' or 'mp3' when the API takes the file as is, else ''. */
export function audioFormat(mime, name = '') {
  const m = String(mime || '').toLowerCase();
  const ext = String(name).toLowerCase().split('.').pop();
  if (['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave'].includes(m) || (!m && ext === 'wav')) return 'wav';
  if (['audio/mpeg', 'audio/mp3', 'audio/mpeg3'].includes(m) || (!m && ext === 'mp3')) return 'mp3';
  if (m === '' || m === 'application/octet-stream') return ext === 'wav' ? 'wav' : ext === 'mp3' ? 'mp3' : '';
  return '';
}

/** base64Of returns the payload of a base64 data URL. */
export function base64Of(dataURL) {
  const k = String(dataURL).indexOf(',');
  return k === -1 ? '' : dataURL.slice(k + 1);
}

/**
 * contentParts returns a user message's content: the plain text when there
 * are no attachments, else the media parts followed by a text part.
 */
export function contentParts(text, attachments = []) {
  if (!attachments.length) return text;
  const parts = attachments.map((a) => {
    if (a.kind === 'image') return { type: 'image_url', image_url: { url: a.data } };
    if (a.kind === 'video') return { type: 'video_url', video_url: { url: a.data } };
    return { type: 'input_audio', input_audio: { data: base64Of(a.data), format: a.format } };
  });
  if (text) parts.push({ type: 'text', text });
  return parts;
}

const NEEDS = { image: 'vision', video: 'video', audio: 'audio' };

/** WHAT names what a capability lets a model take. */
const WHAT = { vision: 'images', video: 'video', audio: 'audio' };

/**
 * missing returns the capabilities the attachments need that model lacks.
 * A model whose capabilities are not listed is not second-guessed: the
 * server decides.
 */
export function missing(attachments, model) {
  if (!model || !Array.isArray(model.capabilities)) return [];
  const need = new Set(attachments.map((a) => NEEDS[a.kind]).filter(Boolean));
  return [...need].filter((c) => !model.capabilities.includes(c)).sort();
}

/** missingMessage says, before sending, why the model cannot take the attachments. */
export function missingMessage(caps, modelID) {
  const what = caps.map((c) => WHAT[c] || c).join(' or ');
  const badge = caps.map((c) => `“${c}”`).join(' and ');
  return `${modelID} does not accept ${what} (it lacks the ${badge} capability). Remove the attachment or pick a model with the ${badge} badge.`;
}

/** encodeWAV returns mono 16-bit PCM WAV bytes of samples in [-1, 1]. */
export function encodeWAV(samples, sampleRate) {
  const n = samples.length;
  const buf = new ArrayBuffer(44 + n * 2);
  const v = new DataView(buf);
  const str = (off, s) => {
    for (let k = 0; k < s.length; k++) v.setUint8(off + k, s.charCodeAt(k));
  };
  str(0, 'RIFF');
  v.setUint32(4, 36 + n * 2, true);
  str(8, 'WAVE');
  str(12, 'fmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true); // PCM
  v.setUint16(22, 1, true); // mono
  v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * 2, true);
  v.setUint16(32, 2, true);
  v.setUint16(34, 16, true);
  str(36, 'data');
  v.setUint32(40, n * 2, true);
  for (let k = 0; k < n; k++) {
    const s = Math.max(-1, Math.min(1, samples[k]));
    v.setInt16(44 + k * 2, s < 0 ? s * 0x8000 : s * 0x7fff, true);
  }
  return new Uint8Array(buf);
}

/** humanBytes formats a byte count for people: 1.5 GB, 820 MB, 12 kB. */
export function humanBytes(n) {
  if (typeof n !== 'number' || !isFinite(n) || n < 0) return '';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let u = 0;
  while (n >= 1000 && u < units.length - 1) {
    n /= 1000;
    u++;
  }
  return `${u === 0 ? n : n.toFixed(n < 10 ? 1 : 0)} ${units[u]}`;
}

function readAsDataURL(blob) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => reject(r.error);
    r.readAsDataURL(blob);
  });
}

async function toWAV(file) {
  const ctx = new OfflineAudioContext(1, 1, 44100);
  const audio = await ctx.decodeAudioData(await file.arrayBuffer());
  const mono = new Float32Array(audio.length);
  for (let ch = 0; ch < audio.numberOfChannels; ch++) {
    const d = audio.getChannelData(ch);
    for (let k = 0; k < d.length; k++) mono[k] += d[k] / audio.numberOfChannels;
  }
  return new Blob([encodeWAV(mono, audio.sampleRate)], { type: 'audio/wav' });
}

/**
 * fromFile reads a File into an attachment {kind, name, mime, data, format}
 * or throws an Error whose message is for the user.
 */
export async function fromFile(file) {
  const name = file.name || 'pasted';
  const kind = kindOf(file.type, name);
  if (!kind) throw new Error(`${name}: only images, video and audio can be attached`);
  if (file.size > MAX_BYTES) throw new Error(`${name} is ${humanBytes(file.size)}; the limit is ${MAX_BYTES >> 20} MiB`);
  if (file.size === 0) throw new Error(`${name} is empty`);
  if (kind === 'image') return { kind, name, mime: file.type || 'image/png', data: await readAsDataURL(file) };
  if (kind === 'video') return { kind, name, mime: file.type || 'video/mp4', data: await readAsDataURL(file) };
  let format = audioFormat(file.type, name);
  let blob = file;
  if (!format) {
    try {
      blob = await toWAV(file);
    } catch {
      throw new Error(`${name}: this browser cannot decode ${file.type || 'this audio'}; attach WAV or MP3`);
    }
    format = 'wav';
  }
  return { kind, name, mime: blob.type || (format === 'mp3' ? 'audio/mpeg' : 'audio/wav'), data: await readAsDataURL(blob), format };
}

/**
 * recordingType is the container the microphone is recorded in: MP4 (AAC)
 * where the browser can write it, since both of the server's decoders read
 * it (ffmpeg, and afconvert on a Mac), else WebM (Opus), else the
 * browser's default. The server decodes the recording: it is sent as is.
 */
export function recordingType(supported = (t) => window.MediaRecorder && MediaRecorder.isTypeSupported(t)) {
  for (const t of ['audio/mp4', 'audio/webm;codecs=opus', 'audio/webm', 'audio/ogg;codecs=opus']) {
    if (supported(t)) return t;
  }
  return '';
}

/** recordingFormat names a recording's container for the input_audio part ('mp4', 'webm', 'ogg'). */
export function recordingFormat(mime) {
  const m = (mime || '').split(';')[0].trim().toLowerCase();
  return { 'audio/mp4': 'mp4', 'audio/webm': 'webm', 'audio/ogg': 'ogg' }[m] || 'webm';
}

/** fromRecording turns a microphone recording into an audio attachment. */
export async function fromRecording(blob, name) {
  if (blob.size === 0) throw new Error('The recording is empty: was the microphone muted?');
  if (blob.size > MAX_BYTES) throw new Error(`The recording is ${humanBytes(blob.size)}; the limit is ${MAX_BYTES >> 20} MiB`);
  const format = recordingFormat(blob.type);
  return { kind: 'audio', name: `${name}.${format === 'mp4' ? 'm4a' : format}`, mime: blob.type || 'audio/webm', data: await readAsDataURL(blob), format };
}
