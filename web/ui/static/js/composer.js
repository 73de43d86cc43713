// Composer is the message box: Enter sends, Shift+Enter breaks the line,
// and images, video or audio arrive by drag and drop anywhere on the page,
// by paste, or through the file button; they wait as chips (thumbnail,
// video still or audio player, with a remove button) until the message is
// sent. The microphone button records a clip (MediaRecorder) that waits
// there too; the server decodes it.

import { fromFile, fromRecording, recordingType } from './attach.js';
import { h } from './render.js';

const LABEL = { image: 'Image', video: 'Video', audio: 'Audio' };

/** MAX_RECORDING_MS stops a recording left running: five minutes is far more than a turn needs and stays under the size limit. */
const MAX_RECORDING_MS = 5 * 60 * 1000;

/** clock formats milliseconds as m:ss. */
function clock(ms) {
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** preview is an attachment's thumbnail: the picture, a video's first frame, or a player. */
function preview(a) {
  if (a.kind === 'image') return h('img', { src: a.data, alt: '' });
  if (a.kind === 'video') return h('video', { src: a.data, muted: true, preload: 'metadata', 'aria-label': a.name });
  return h('audio', { controls: true, src: a.data, 'aria-label': a.name });
}

export class Composer {
  /**
   * @param {{form, input, fileInput, attachButton, recordButton, tray, overlay}} els
   * @param {{onSubmit: () => void, onError: (msg: string) => void, onChange: () => void}} on
   */
  constructor(els, on) {
    this.els = els;
    this.on = on;
    this.attachments = [];
    this.pending = 0;
    this.recording = null;
    const { form, input, fileInput, attachButton, recordButton } = els;
    // Shown only where recording can work: localhost is a secure context,
    // other addresses need HTTPS for getUserMedia.
    if (recordButton && navigator.mediaDevices && navigator.mediaDevices.getUserMedia && window.MediaRecorder) {
      recordButton.hidden = false;
      recordButton.addEventListener('click', () => (this.recording ? this.stopRecording() : this.startRecording()));
    }
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.on.onSubmit();
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing && !e.altKey) {
        e.preventDefault();
        this.on.onSubmit();
      }
    });
    input.addEventListener('input', () => {
      this.autosize();
      this.on.onChange();
    });
    input.addEventListener('paste', (e) => {
      const files = [...(e.clipboardData ? e.clipboardData.files : [])];
      if (files.length) {
        if (!e.clipboardData.getData('text/plain')) e.preventDefault();
        this.add(files);
      }
    });
    attachButton.addEventListener('click', () => fileInput.click());
    fileInput.addEventListener('change', () => {
      this.add([...fileInput.files]);
      fileInput.value = '';
    });
    this.dragDepth = 0;
    const hasFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes('Files');
    document.addEventListener('dragenter', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      this.dragDepth++;
      els.overlay.hidden = false;
    });
    document.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = 'copy';
    });
    document.addEventListener('dragleave', (e) => {
      if (!hasFiles(e)) return;
      this.dragDepth = Math.max(0, this.dragDepth - 1);
      if (this.dragDepth === 0) els.overlay.hidden = true;
    });
    document.addEventListener('drop', (e) => {
      this.dragDepth = 0;
      els.overlay.hidden = true;
      if (!e.dataTransfer || !e.dataTransfer.files.length) return;
      e.preventDefault();
      this.add([...e.dataTransfer.files]);
    });
  }

  /** text is the message typed so far. */
  get text() {
    return this.els.input.value;
  }

  set text(v) {
    this.els.input.value = v;
    this.autosize();
  }

  /** busy reports whether files are still being read or a recording runs. */
  get busy() {
    return this.pending > 0 || this.recording !== null;
  }

  /** startRecording asks for the microphone and records until stopRecording. */
  async startRecording() {
    if (this.recording) return;
    this.recording = { starting: true };
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (e) {
      this.recording = null;
      const denied = e && (e.name === 'NotAllowedError' || e.name === 'SecurityError');
      this.on.onError(denied ? 'Microphone access was denied; allow it for this page to record.' : `Cannot record: ${(e && e.message) || e}`);
      return;
    }
    const type = recordingType();
    let rec;
    try {
      rec = new MediaRecorder(stream, type ? { mimeType: type } : undefined);
    } catch (e) {
      stream.getTracks().forEach((t) => t.stop());
      this.recording = null;
      this.on.onError(`Cannot record: ${(e && e.message) || e}`);
      return;
    }
    const chunks = [];
    const started = Date.now();
    const name = `recording-${new Date(started).toTimeString().slice(0, 8).replaceAll(':', '')}`;
    const btn = this.els.recordButton;
    const icon = [...btn.childNodes];
    const tick = () => (btn.textContent = `■ ${clock(Date.now() - started)}`);
    rec.addEventListener('dataavailable', (e) => {
      if (e.data && e.data.size) chunks.push(e.data);
    });
    rec.addEventListener('stop', async () => {
      stream.getTracks().forEach((t) => t.stop());
      clearInterval(this.recording.timer);
      clearTimeout(this.recording.limit);
      this.recording = null;
      btn.setAttribute('aria-pressed', 'false');
      btn.setAttribute('aria-label', 'Record audio');
      btn.replaceChildren(...icon);
      this.pending++;
      this.paint();
      try {
        this.attachments.push(await fromRecording(new Blob(chunks, { type: rec.mimeType || type }), name));
      } catch (e) {
        this.on.onError(e.message);
      } finally {
        this.pending--;
        this.paint();
        this.on.onChange();
      }
    });
    rec.start(250);
    this.recording = { rec, timer: setInterval(tick, 250), limit: setTimeout(() => this.stopRecording(), MAX_RECORDING_MS) };
    btn.setAttribute('aria-pressed', 'true');
    btn.setAttribute('aria-label', 'Stop recording');
    tick();
  }

  /** stopRecording ends the recording; its clip joins the attachments. */
  stopRecording() {
    const r = this.recording;
    if (r && r.rec && r.rec.state !== 'inactive') r.rec.stop();
  }

  focus() {
    this.els.input.focus();
  }

  autosize() {
    const t = this.els.input;
    t.style.height = 'auto';
    t.style.height = Math.min(t.scrollHeight + 2, Math.round(window.innerHeight * 0.4)) + 'px';
  }

  /** add reads files into attachments, reporting the ones it cannot take. */
  async add(files) {
    this.pending++;
    this.paint();
    try {
      for (const f of files) {
        try {
          this.attachments.push(await fromFile(f));
        } catch (e) {
          this.on.onError(e.message);
        }
        this.paint();
      }
    } finally {
      this.pending--;
      this.paint();
      this.on.onChange();
    }
  }

  /** take returns the attachments and empties the box. */
  take() {
    const a = this.attachments;
    this.attachments = [];
    this.text = '';
    this.paint();
    return a;
  }

  paint() {
    const tray = this.els.tray;
    tray.hidden = !this.attachments.length && !this.pending;
    const chips = this.attachments.map((a, i) => {
        const remove = h('button', { type: 'button', class: 'chip-remove', 'aria-label': `Remove ${a.name}` }, '×');
        remove.addEventListener('click', () => {
          this.attachments.splice(i, 1);
          this.paint();
          this.on.onChange();
          this.focus();
        });
        return h('div', { class: `chip chip-${a.kind}`, role: 'group', 'aria-label': `${LABEL[a.kind] || 'File'} ${a.name}` }, preview(a), h('span', { class: 'chip-name' }, a.name), remove);
    });
    if (this.pending) chips.push(h('div', { class: 'chip chip-reading', role: 'status' }, 'Reading…'));
    tray.replaceChildren(...chips);
  }
}
