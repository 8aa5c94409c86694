"""``datacurate export``: a checkpoint as a Hugging Face model directory.

The GPT of :mod:`datacurate.train.model` is GPT-2's architecture without linear biases
and with exact GELU, so it maps onto ``GPT2LMHeadModel`` weight for weight:
``activation_function: "gelu"`` (GPT-2's own is the tanh approximation), every linear
bias zero, LayerNorm (with its bias, eps 1e-5) as it is, learned positions, the head tied
to the token embedding (``tie_word_embeddings``: only ``transformer.wte.weight`` is
stored). GPT-2's linear layers are ``Conv1D`` modules holding ``(in, out)`` weights, the
transpose of ``torch.nn.Linear``'s; ``c_attn`` packs q, k, v along its output as our
``qkv`` does, and both scale attention by 1 / sqrt(head_dim).

The directory holds ``config.json``, ``model.safetensors`` (fp32, written here: the
format is an 8-byte header length, a JSON header of names, dtypes, shapes and byte
ranges, then the raw little-endian tensors) and the tokenizer as a
``PreTrainedTokenizerFast`` (:func:`datacurate.formats.tokenizer.hf_tokenizer_files`), so
``AutoModelForCausalLM`` / ``AutoTokenizer.from_pretrained(dir)`` open it, and with
them lm-evaluation-harness. The tokenizer is the checkpoint's own: the shards'
``tokenizer.json`` its training config names, or ``tokenizer``, checked against the
sha256 the checkpoint recorded. Nothing here imports transformers.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Optional

import numpy as np
import torch

from datacurate.train import checkpoint
from datacurate.train.checkpoint import CheckpointError

FORMATS = ("hf",)


def gpt2_config(shape, eos_id: int, bos_id: Optional[int]) -> dict:
    return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": shape.vocab_size,
            "n_positions": shape.max_seq_len, "n_embd": shape.n_embd, "n_layer": shape.n_layer,
            "n_head": shape.n_head, "n_inner": 4 * shape.n_embd, "activation_function": "gelu",
            "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0, "layer_norm_epsilon": 1e-5,
            "initializer_range": 0.02, "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
            "reorder_and_upcast_attn": False, "tie_word_embeddings": True, "use_cache": True,
            "bos_token_id": eos_id if bos_id is None else bos_id, "eos_token_id": eos_id, "dtype": "float32"}


def gpt2_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Our GPT's weights under GPT2LMHeadModel's names and layouts (Conv1D: ``(in, out)``)."""
    sd = {k: v.detach().to("cpu", torch.float32) for k, v in model.state_dict().items()}
    out = {"transformer.wte.weight": sd["wte.weight"], "transformer.wpe.weight": sd["wpe.weight"],
           "transformer.ln_f.weight": sd["ln_f.weight"], "transformer.ln_f.bias": sd["ln_f.bias"]}
    convs = {"attn.c_attn": "attn.qkv", "attn.c_proj": "attn.proj", "mlp.c_fc": "mlp.fc", "mlp.c_proj": "mlp.proj"}
    for i in range(model.shape.n_layer):
        h, b = f"transformer.h.{i}.", f"blocks.{i}."
        for ln_hf, ln in (("ln_1", "ln1"), ("ln_2", "ln2")):
            out[h + ln_hf + ".weight"], out[h + ln_hf + ".bias"] = sd[b + ln + ".weight"], sd[b + ln + ".bias"]
        for hf, ours in convs.items():
            w = sd[b + ours + ".weight"]  # (out, in)
            out[h + hf + ".weight"] = w.t().contiguous()  # (in, out)
            out[h + hf + ".bias"] = torch.zeros(w.shape[0])  # our linears have none
    return out


def write_safetensors(path: str, tensors: dict[str, torch.Tensor]) -> None:
    """fp32 tensors -> a ``.safetensors`` file (header padded to 8 bytes, as the library does)."""
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name].numpy(), dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(len(head).to_bytes(8, "little") + head)
        for data in blobs:
            f.write(data)


def checkpoint_tokenizer(state: dict, ckpt: str, tokenizer: Optional[str]):
    """The checkpoint's tokenizer (its shards' copy, or ``tokenizer``), checked against it."""
    from datacurate.formats.tokenizer import load_tokenizer

    if tokenizer is None:
        shards = (state.get("config") or {}).get("shards")
        tokenizer = os.path.join(shards, "tokenizer.json") if shards else None
        if tokenizer is None or not os.path.isfile(tokenizer):
            raise CheckpointError(f"{ckpt}: its shards' tokenizer.json ({tokenizer}) is not there; pass --tokenizer")
    _, info = load_tokenizer(tokenizer)
    vocab = state["shape"]["vocab_size"]
    if info.vocab_size != vocab:
        raise CheckpointError(f"tokenizer {tokenizer}: {info.vocab_size} tokens, the checkpoint's vocabulary has {vocab}")
    if state.get("tokenizer_sha256") not in (None, info.sha256):
        raise CheckpointError(f"tokenizer {tokenizer} (sha256 {info.sha256[:12]}…) is not the one {ckpt} was "
                              f"trained with ({str(state['tokenizer_sha256'])[:12]}…)")
    return info


def check_output(out_dir: str, overwrite: bool) -> None:
    if os.path.isfile(out_dir):
        raise CheckpointError(f"--output {out_dir} is a file")
    if os.path.isdir(out_dir) and os.listdir(out_dir) and not overwrite:
        raise CheckpointError(f"--output {out_dir} exists and is not empty; pass --overwrite to replace it")


def export_model(ckpt: str, out_dir: str, fmt: str = "hf", tokenizer: Optional[str] = None,
                 overwrite: bool = False) -> dict:
    """Write checkpoint ``ckpt`` to ``out_dir`` in ``fmt``; a summary. The directory is
    filled under a temporary name and renamed, so it never holds half an export."""
    from datacurate.formats.tokenizer import hf_tokenizer_files

    if fmt not in FORMATS:
        raise CheckpointError(f"export: unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    check_output(out_dir, overwrite)
    path = checkpoint.resolve(ckpt)
    state = checkpoint.read_state(path)
    info = checkpoint_tokenizer(state, path, tokenizer)
    model, state = checkpoint.load_model(path)
    tmp = out_dir.rstrip("/") + f".tmp{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(gpt2_config(model.shape, info.eos_id, info.bos_id), f, indent=2)
        write_safetensors(os.path.join(tmp, "model.safetensors"), gpt2_state_dict(model))
        for name, data in hf_tokenizer_files(info, model.shape.max_seq_len).items():
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        if os.path.isdir(out_dir):
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"checkpoint": path, "step": state["step"], "output": out_dir, "parameters": model.num_params(False),
            "describe_params": model.describe_params(),
            "tokenizer_sha256": info.sha256}
