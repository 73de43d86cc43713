// synthetic.js builds small tokenizer.json files that exercise components
// the seven real tokenizers do not use (Metaspace, Digits, lstrip/rstrip/
// single_word added tokens, NFKC/NFKD/Lowercase/Strip normalizers, …). Each
// takes the first merges of a real vocabulary, so gold.js can record what the
// reference does with them. They are committed under
// engine/tokenizer/testdata/synthetic/<name>/, so their tests need no fetch.
'use strict'
const fs = require('fs')
const path = require('path')
const { cacheDir, tokdir } = require('./common')

const readReal = (name) => JSON.parse(fs.readFileSync(path.join(cacheDir(name), 'tokenizer.json'), 'utf8'))
const pairOf = (m) => (Array.isArray(m) ? m : m.split(' '))

// subBPE keeps the first nMerges merges of a BPE model, the tokens they use,
// and the tokens keep() selects; ids are renumbered densely in old order.
function subBPE(model, nMerges, keep, pairs) {
  const merges = model.merges.slice(0, nMerges).map(pairOf)
  const want = new Set()
  for (const [a, b] of merges) want.add(a).add(b).add(a + b)
  const entries = Object.entries(model.vocab).filter(([t]) => want.has(t) || keep(t))
  entries.sort((x, y) => x[1] - y[1])
  const vocab = {}
  entries.forEach(([t], i) => (vocab[t] = i))
  return {
    ...model,
    vocab,
    merges: pairs ? merges : merges.map(([a, b]) => `${a} ${b}`),
  }
}

// added makes added_tokens entries; ids continue after the vocabulary unless
// the content is already in it.
function added(vocab, specs) {
  let next = Object.keys(vocab).length
  return specs.map(([content, opts]) => ({
    id: content in vocab ? vocab[content] : next++,
    content,
    single_word: !!opts.single_word,
    lstrip: !!opts.lstrip,
    rstrip: !!opts.rstrip,
    normalized: !!opts.normalized,
    special: !!opts.special,
  }))
}

const byteLevel = (addPrefixSpace, useRegex) => ({ type: 'ByteLevel', add_prefix_space: addPrefixSpace, trim_offsets: true, use_regex: useRegex })
const tokenizer = (fields) => ({ version: '1.0', truncation: null, padding: null, ...fields })
const template = (single, vocabOf) => ({
  type: 'TemplateProcessing',
  single: single.map((x) => (x === 'A' ? { Sequence: { id: 'A', type_id: 0 } } : { SpecialToken: { id: x, type_id: 0 } })),
  pair: [],
  special_tokens: Object.fromEntries(single.filter((x) => x !== 'A').map((x) => [x, { id: x, ids: [vocabOf(x)], tokens: [x] }])),
})

// build returns name → {tokenizer, config} for every synthetic tokenizer.
function build() {
  const qwen = readReal('qwen3').model
  const llama2 = readReal('llama2').model
  const isSingleChar = (t) => [...t].length === 1
  const out = {}

  // GPT-2 style: ByteLevel with its own regex and a prefix space, Roberta
  // post-processing, added tokens with every flag.
  {
    const model = subBPE(qwen, 2000, isSingleChar, true)
    const toks = added(model.vocab, [
      ['<s>', { special: true }], ['</s>', { special: true }], ['<pad>', { special: true }],
      ['[MASK]', { special: true, lstrip: true }], ['<|r|>', { special: true, rstrip: true }],
      ['<sw>', { single_word: true, normalized: true }], [' spaced ', {}], ['ĠĠ', { normalized: true }],
      ['<both>', { lstrip: true, rstrip: true }], ['<sw2>', { single_word: true, special: true }],
    ])
    const id = (c) => toks.find((t) => t.content === c).id
    out.syn_gpt2 = {
      tokenizer: tokenizer({
        added_tokens: toks, normalizer: null, pre_tokenizer: byteLevel(true, true),
        post_processor: { type: 'RobertaProcessing', sep: ['</s>', id('</s>')], cls: ['<s>', id('<s>')], trim_offsets: true, add_prefix_space: true },
        decoder: byteLevel(true, true), model,
      }),
      config: { bos_token: '<s>', eos_token: { __type: 'AddedToken', content: '</s>', lstrip: false, normalized: false, rstrip: false, single_word: false } },
    }
  }

  // Normalizers and Split behaviours, on a byte-level model.
  {
    const model = subBPE(qwen, 1500, isSingleChar, false)
    model.ignore_merges = true
    const toks = added(model.vocab, [
      ['[CLS]', { special: true }], ['[SEP]', { special: true }], ['hello', { normalized: true }], ['straße', { normalized: true }],
      ['<raw>', { normalized: false }],
    ])
    const id = (c) => toks.find((t) => t.content === c).id
    out.syn_norm = {
      tokenizer: tokenizer({
        added_tokens: toks,
        normalizer: { type: 'Sequence', normalizers: [
          { type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' },
          { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }, { type: 'Strip', strip_left: true, strip_right: false },
        ] },
        pre_tokenizer: { type: 'Sequence', pretokenizers: [
          { type: 'Digits', individual_digits: true },
          { type: 'Split', pattern: { Regex: '[.,;]' }, behavior: 'MergedWithPrevious', invert: false },
          { type: 'Split', pattern: { String: '-' }, behavior: 'Removed', invert: false },
          { type: 'Split', pattern: { Regex: '\\s+' }, behavior: 'MergedWithNext', invert: false },
          { type: 'Split', pattern: { Regex: '[a-z]' }, behavior: 'Contiguous', invert: false },
          { type: 'Split', pattern: { Regex: '[!?]+' }, behavior: 'Isolated', invert: true },
          byteLevel(false, false),
        ] },
        post_processor: template(['[CLS]', 'A', '[SEP]'], id),
        decoder: { type: 'Sequence', decoders: [byteLevel(false, false), { type: 'Strip', content: ' ', start: 2, stop: 0 }] },
        model,
      }),
      config: { bos_token: '[CLS]', eos_token: '[SEP]' },
    }
  }

  // SentencePiece style with Metaspace, NFKC, BOS and EOS, byte fallback with
  // a byte missing (so some characters fall back to a fused unk).
  {
    const model = subBPE(llama2, 2000, (t) => isSingleChar(t) || /^<0x[0-9A-F]{2}>$/.test(t) || ['<unk>', '<s>', '</s>'].includes(t), false)
    delete model.vocab['<0x9F>']
    Object.keys(model.vocab).forEach((t, i) => (model.vocab[t] = i))
    model.fuse_unk = true
    const toks = added(model.vocab, [
      ['<unk>', { special: true }], ['<s>', { special: true }], ['</s>', { special: true }],
      ['<tab>', { special: true, lstrip: true }], ['<nl>', { rstrip: true }],
    ])
    const id = (c) => toks.find((t) => t.content === c).id
    out.syn_metaspace = {
      tokenizer: tokenizer({
        added_tokens: toks, normalizer: { type: 'NFKC' },
        pre_tokenizer: { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true },
        post_processor: template(['<s>', 'A', '</s>'], id),
        decoder: { type: 'Sequence', decoders: [{ type: 'ByteFallback' }, { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: true }, { type: 'Fuse' }] },
        model,
      }),
      config: { bos_token: '<s>', eos_token: '</s>', add_bos_token: true, add_eos_token: true },
    }
  }

  // Unknown characters without byte fallback, whitespace and delimiter
  // splits, Bert post-processing, no decoder (tokens joined with spaces).
  {
    const model = subBPE(llama2, 1500, (t) => (isSingleChar(t) && t.charCodeAt(0) < 0x250) || ['<unk>', '<s>', '</s>'].includes(t), false)
    model.byte_fallback = false
    model.fuse_unk = false
    const toks = added(model.vocab, [['<unk>', { special: true }], ['<s>', { special: true }], ['</s>', { special: true }]])
    const id = (c) => toks.find((t) => t.content === c).id
    out.syn_unk = {
      tokenizer: tokenizer({
        added_tokens: toks, normalizer: null,
        pre_tokenizer: { type: 'Sequence', pretokenizers: [
          { type: 'WhitespaceSplit' }, { type: 'Digits', individual_digits: false }, { type: 'CharDelimiterSplit', delimiter: '_' },
          { type: 'Split', pattern: { Regex: '[\\p{L}\\p{N}<>\\[\\]/|]+' }, behavior: 'Removed', invert: true },
        ] },
        post_processor: { type: 'BertProcessing', sep: ['</s>', id('</s>')], cls: ['<s>', id('<s>')] },
        decoder: null, model,
      }),
      config: { bos_token: '<s>', eos_token: '</s>' },
    }
  }

  // continuing_subword_prefix and end_of_word_suffix, on a hand-made
  // vocabulary of letters.
  {
    const vocab = { '[UNK]': 0 }
    const add = (t) => { if (!(t in vocab)) vocab[t] = Object.keys(vocab).length }
    for (const c of 'abcdefghijklmnopqrstuvwxyz0123456789') for (const t of [c, `##${c}`, `${c}</w>`, `##${c}</w>`]) add(t)
    const merges = [['h', '##e'], ['##l', '##l'], ['he', '##ll'], ['##o', '##r'], ['##l', '##o</w>'], ['hell', '##o</w>'], ['w', '##or'], ['wor', '##l'], ['worl', '##d</w>'], ['t', '##h'], ['th', '##e</w>'], ['1', '##2'], ['12', '##3</w>'], ['4', '##2</w>']]
    for (const [a, b] of merges) add(a + b.slice(2))
    out.syn_suffix = {
      tokenizer: tokenizer({
        added_tokens: added(vocab, [['[UNK]', { special: true }]]), normalizer: { type: 'Lowercase' },
        pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Digits', individual_digits: false }] }, post_processor: null,
        decoder: null,
        model: { type: 'BPE', dropout: null, unk_token: '[UNK]', continuing_subword_prefix: '##', end_of_word_suffix: '</w>', fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges },
      }),
      config: null,
    }
  }
  return out
}

const syntheticDir = (name) => path.join(tokdir, 'synthetic', name)

// write builds the synthetic tokenizers and writes them; it returns their names.
function write() {
  const all = build()
  for (const [name, { tokenizer, config }] of Object.entries(all)) {
    const dir = syntheticDir(name)
    fs.mkdirSync(dir, { recursive: true })
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizer) + '\n')
    const cfg = path.join(dir, 'tokenizer_config.json')
    if (config) fs.writeFileSync(cfg, JSON.stringify(config, null, 1) + '\n')
    else if (fs.existsSync(cfg)) fs.unlinkSync(cfg)
  }
  return Object.keys(all)
}

module.exports = { write, syntheticDir }
