#!/usr/bin/env python3
"""Writes the tiny word-level Hugging Face tokenizer folders the conformance runs use.

One whitespace-separated word is exactly one token, so prompt and output lengths can be
counted by eye and by tools/conformance/mock_server.py (which counts whitespace words).
Dependency: the `tokenizers` package (PyPI). The folders load with
transformers.AutoTokenizer.from_pretrained(path).

  tokenizer/      no special tokens are ever added: count_tokens(text) == len(text.split())
  tokenizer-bos/  the same vocabulary, but encoding prepends a BOS "<s>" (as Llama/Gemma
                  tokenizers do): count_tokens(text) == len(text.split()) + 1 unless the
                  caller passes add_special_tokens=False

The vocabulary holds no special token in the id range prompt generators draw from (random ids
in [0, vocab_size)), so decoding any id list gives one word per id: "unk" is an ordinary word
that also serves as the unknown token, and "<s>" is an added token past vocab_size.
"""
import json
import os
import sys

from tokenizers import Tokenizer, models, pre_tokenizers, processors, decoders

WORDS = ["unk"] + ["p%d" % i for i in range(500)] + ["tok%d" % i for i in range(512)]


def build(path, bos):
    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="unk"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with one space
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 8192,
           "clean_up_tokenization_spaces": False}
    if bos:
        tok.add_special_tokens(["<s>"])
        bos_id = tok.token_to_id("<s>")
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)])
        cfg.update(bos_token="<s>", add_bos_token=True)
    os.makedirs(path, exist_ok=True)
    tok.save(os.path.join(path, "tokenizer.json"))
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
        f.write("\n")
    return tok


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else here
    build(os.path.join(out, "tokenizer"), bos=False)
    build(os.path.join(out, "tokenizer-bos"), bos=True)
    print("wrote", os.path.join(out, "tokenizer"), "and", os.path.join(out, "tokenizer-bos"))
