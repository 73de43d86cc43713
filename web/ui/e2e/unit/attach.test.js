import assert from 'node:assert/strict';
import { test } from 'node:test';
import { audioFormat, contentParts, encodeWAV, humanBytes, kindOf, missing, missingMessage, recordingFormat, recordingType } from '../../static/js/attach.js';

const img = { kind: 'image', name: 'a.png', mime: 'image/png', data: 'data:image/png;base64,iVBO' };
const mp4 = { kind: 'video', name: 'a.mp4', mime: 'video/mp4', data: 'data:video/mp4;base64,AAAA' };
const wav = { kind: 'audio', name: 'a.wav', mime: 'audio/wav', data: 'data:audio/wav;base64,UklG', format: 'wav' };

test('contentParts', () => {
  assert.equal(contentParts('hi', []), 'hi');
  assert.deepEqual(contentParts('what?', [img, wav]), [
    { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBO' } },
    { type: 'input_audio', input_audio: { data: 'UklG', format: 'wav' } },
    { type: 'text', text: 'what?' },
  ]);
  assert.deepEqual(contentParts('', [img]), [{ type: 'image_url', image_url: { url: img.data } }]);
  assert.deepEqual(contentParts('and this?', [mp4]), [
    { type: 'video_url', video_url: { url: 'data:video/mp4;base64,AAAA' } },
    { type: 'text', text: 'and this?' },
  ]);
});

test('missing capabilities', () => {
  const cases = [
    { name: 'text-only model', model: { id: 'm', capabilities: [] }, atts: [img, wav], want: ['audio', 'vision'] },
    { name: 'vision model, audio file', model: { id: 'm', capabilities: ['vision'] }, atts: [img, wav], want: ['audio'] },
    { name: 'all there', model: { id: 'm', capabilities: ['vision', 'audio'] }, atts: [img, wav], want: [] },
    { name: 'unknown capabilities: the server decides', model: { id: 'm' }, atts: [img], want: [] },
    { name: 'no model entry', model: null, atts: [img], want: [] },
    { name: 'vision model, a video', model: { id: 'm', capabilities: ['vision'] }, atts: [img, mp4], want: ['video'] },
  ];
  for (const c of cases) assert.deepEqual(missing(c.atts, c.model), c.want, c.name);
  assert.equal(missingMessage(['vision'], 'chat-tiny'), 'chat-tiny does not accept images (it lacks the “vision” capability). Remove the attachment or pick a model with the “vision” badge.');
  assert.match(missingMessage(['video'], 'gemma'), /^gemma does not accept video \(it lacks the “video” capability\)/);
  assert.equal(
    missingMessage(['audio', 'vision'], 'chat-tiny'),
    'chat-tiny does not accept audio or images (it lacks the “audio” and “vision” capability). Remove the attachment or pick a model with the “audio” and “vision” badge.',
  );
});

test('kinds and formats', () => {
  assert.equal(kindOf('image/webp'), 'image');
  assert.equal(kindOf('', 'clip.MP3'), 'audio');
  assert.equal(kindOf('application/pdf', 'x.pdf'), '');
  assert.equal(kindOf('video/webm', 'a.webm'), 'video');
  assert.equal(kindOf('', 'clip.MOV'), 'video');
  assert.equal(kindOf('', 'photo.jpeg'), 'image');
  assert.equal(audioFormat('audio/x-wav'), 'wav');
  assert.equal(audioFormat('audio/mpeg'), 'mp3');
  assert.equal(audioFormat('audio/ogg', 'a.ogg'), '');
  assert.equal(audioFormat('', 'a.wav'), 'wav');
});

test('encodeWAV writes a 16-bit mono PCM header and clamps samples', () => {
  const b = encodeWAV(new Float32Array([0, 1, -1, 2]), 16000);
  const v = new DataView(b.buffer);
  assert.equal(String.fromCharCode(...b.slice(0, 4)), 'RIFF');
  assert.equal(String.fromCharCode(...b.slice(8, 12)), 'WAVE');
  assert.equal(v.getUint32(4, true), 36 + 8);
  assert.equal(v.getUint16(22, true), 1);
  assert.equal(v.getUint32(24, true), 16000);
  assert.equal(v.getUint16(34, true), 16);
  assert.deepEqual([1, 2, 3, 4].map((k) => v.getInt16(42 + k * 2, true)), [0, 32767, -32768, 32767]);
});

test('humanBytes', () => {
  assert.equal(humanBytes(0), '0 B');
  assert.equal(humanBytes(1500), '1.5 kB');
  assert.equal(humanBytes(6.1e9), '6.1 GB');
  assert.equal(humanBytes(820e6), '820 MB');
  assert.equal(humanBytes(undefined), '');
});

test('recording container', () => {
  // MP4 first (both server decoders read it), then WebM/Opus, then Ogg.
  assert.equal(recordingType(() => true), 'audio/mp4');
  assert.equal(recordingType((t) => t.startsWith('audio/webm')), 'audio/webm;codecs=opus');
  assert.equal(recordingType((t) => t.startsWith('audio/ogg')), 'audio/ogg;codecs=opus');
  assert.equal(recordingType(() => false), '');
  assert.equal(recordingFormat('audio/webm;codecs=opus'), 'webm');
  assert.equal(recordingFormat('audio/mp4'), 'mp4');
  assert.equal(recordingFormat('audio/ogg; codecs=opus'), 'ogg');
  assert.equal(recordingFormat(''), 'webm');
});
