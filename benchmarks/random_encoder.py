"""Encoders with random weights, built from a config on this machine (never a download):
the models the ``model_classifier`` tests and speed benchmarks run.

``build(out, arch=...)`` writes a Hugging Face model directory: a WordPiece tokenizer
trained here with ``tokenizers`` on the given texts, and a sequence classifier of the
named architecture with seeded random weights (``save_pretrained``). ``arch``:

* ``tiny-bert`` / ``tiny-deberta``: a few layers, for tests;
* ``small-bert``: 4 layers, 256 hidden, 512 positions, for CPU speed;
* ``arctic-embed-m``: the shape of Snowflake's snowflake-arctic-embed-m, FineWeb-Edu's
  classifier's encoder (BERT-base: 12 layers, 768 hidden, 12 heads, 3,072 intermediate,
  512 positions) with a 1-output regression head, for speed;
* ``nemo-deberta``: NeMo Curator's ``Deberta`` layout (``base_model`` + ``fc``), small.
"""

from __future__ import annotations

import json
from pathlib import Path

ARCHS = {
    "tiny-bert": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                max_position_embeddings=64, initializer_range=0.5),  # wide weights: scores spread
    "tiny-deberta": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                max_position_embeddings=64, initializer_range=0.5),  # wide weights: scores spread
    "small-bert": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                       max_position_embeddings=512),  # CPU speed comparisons
    "arctic-embed-m": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                           max_position_embeddings=512),
    "nemo-deberta": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                max_position_embeddings=64, initializer_range=0.5),  # wide weights: scores spread
}


def train_tokenizer(texts: list[str], vocab_size: int, max_length: int):
    """A BERT-style WordPiece tokenizer trained on ``texts`` (a transformers fast tokenizer)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_length)


def build(out: str | Path, texts: list[str], arch: str = "tiny-bert", labels: list[str] | None = None,
          seed: int = 0, vocab_size: int = 2000) -> str:
    """A model directory at ``out``: ``labels`` None = a 1-output regression head, else a
    classifier over them (``config.id2label``)."""
    import torch
    from transformers import (BertConfig, BertForSequenceClassification, DebertaV2Config,
                              DebertaV2ForSequenceClassification)

    out = Path(out)
    shape = ARCHS[arch]
    tok = train_tokenizer(texts, vocab_size, shape["max_position_embeddings"])
    torch.manual_seed(seed)
    n = 1 if labels is None else len(labels)
    head = {"num_labels": n, "problem_type": "regression" if labels is None else "single_label_classification"}
    if labels is not None:
        head.update(id2label=dict(enumerate(labels)), label2id={v: i for i, v in enumerate(labels)})
    common = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id, **shape)
    if arch == "nemo-deberta":
        return _nemo(out, tok, DebertaV2Config(**common, type_vocab_size=0), labels or ["a", "b"])
    if arch == "tiny-deberta":
        model = DebertaV2ForSequenceClassification(DebertaV2Config(**common, type_vocab_size=0, **head))
    else:
        model = BertForSequenceClassification(BertConfig(**common, **head))
    model.eval().save_pretrained(out)
    tok.save_pretrained(out)
    return str(out)


def _nemo(out: Path, tok, base_cfg, labels: list[str]) -> str:
    """NeMo Curator's layout: config.json names the base model (here a local directory
    holding its config) and the head; the weights are ``model.*`` and ``fc.*``."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoModel

    base_dir = out / "base"
    base_cfg.save_pretrained(base_dir)
    body = AutoModel.from_config(base_cfg)
    fc = torch.nn.Linear(base_cfg.hidden_size, len(labels))
    state = {f"model.{k}": v.contiguous() for k, v in body.state_dict().items()}
    state.update({f"fc.{k}": v.contiguous() for k, v in fc.state_dict().items()})
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"))
    (out / "config.json").write_text(json.dumps({"base_model": str(base_dir), "fc_dropout": 0.2,
                                                 "id2label": {str(i): v for i, v in enumerate(labels)}}))
    tok.save_pretrained(out)
    return str(out)
