// Think separates a reply's reasoning from its answer. Reasoning arrives
// either as text between <think> and </think> (the opening tag is
// sometimes put in the prompt by the chat template, so only the closing one
// is generated) or in the delta's reasoning_content field, which the
// caller passes as reasoning.

const OPEN = '<think>';
const CLOSE = '</think>';

/**
 * split returns {thinking, answer, thinkingOpen}: thinking is null when the
 * reply has none; thinkingOpen is true while the reasoning is unfinished.
 */
export function split(text, reasoning = '') {
  let t = String(text || '');
  const lead = t.length - t.trimStart().length;
  const body = t.slice(lead);
  let thinking = null;
  let answer = t;
  let open = false;
  if (body.startsWith(OPEN)) {
    const end = body.indexOf(CLOSE);
    if (end === -1) {
      thinking = body.slice(OPEN.length);
      answer = '';
      open = true;
    } else {
      thinking = body.slice(OPEN.length, end);
      answer = body.slice(end + CLOSE.length);
    }
  } else if (body !== '' && OPEN.startsWith(body)) {
    // The start of a tag still streaming in: show nothing yet.
    answer = '';
  } else {
    const end = body.indexOf(CLOSE);
    if (end !== -1 && !body.slice(0, end).includes(OPEN)) {
      thinking = body.slice(0, end);
      answer = body.slice(end + CLOSE.length);
    }
  }
  if (reasoning) {
    thinking = reasoning + (thinking || '');
    open = open || answer.trim() === '';
  }
  if (thinking !== null) thinking = thinking.replace(/^\n+/, '').replace(/\s+$/, '');
  return { thinking, answer: answer.replace(/^\n+/, ''), thinkingOpen: open };
}

/** strip returns the answer without its reasoning, for the history sent back. */
export function strip(text) {
  return split(text).answer.trim();
}
