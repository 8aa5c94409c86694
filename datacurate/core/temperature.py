"""Temperature sampling over domains (languages), the one formula the mixture and the
tokenizer's balanced training text share.

``w_d = (N_d / N)^alpha`` over each domain's size ``N_d`` (tokens, bytes): alpha = 1 is the
natural mixture; smaller alphas up-sample the small domains and down-sample the large ones.
XLM (Conneau and Lample 2019) used alpha = 0.5; XLM-R (Conneau et al. 2020, "Unsupervised
Cross-lingual Representation Learning at Scale") and mT5 (Xue et al. 2021, "mT5: A Massively
Multilingual Pre-trained Text-to-Text Transformer") alpha = 0.3 over 100+ languages. With
alpha = 0.3 a language with 1/1000 of another's tokens gets 1/8 of its share, not 1/1000.
"""

from __future__ import annotations


def temperature(sizes: dict[str, int], alpha: float) -> dict[str, float]:
    """Unnormalised weights ``(N_d / N)^alpha`` (0 for an empty domain; {} when all are)."""
    total = sum(sizes.values())
    return {d: (n / total) ** alpha if n > 0 else 0.0 for d, n in sizes.items()} if total else {}


def shares(sizes: dict[str, int], alpha: float) -> dict[str, float]:
    """The sampled shares: the weights normalised to sum to 1."""
    w = temperature(sizes, alpha)
    norm = sum(w.values())
    return {d: v / norm for d, v in w.items()} if norm else {}
