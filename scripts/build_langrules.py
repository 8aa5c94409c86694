"""Build ``datacurate/resources/langrules/fineweb2.json`` from FineWeb-2's per-language configs.

Usage: ``python scripts/build_langrules.py FINEWEB2_GIT_DIR`` (a clone, or the bare
mirror, of github.com/huggingface/fineweb-2; its ``configs/{iso639_3}_{Script}.yml`` are
Apache-2.0). ISO 639-1 -> 639-3 comes from Debian's ``iso-codes`` package
(``/usr/share/iso-codes/json/iso_639-3.json``). Run once; the JSON is what ships.

Every FineWeb-2 config is kept under its own key (``fra_Latn``), so a GlotLID-style
model's labels find theirs; ``lid176`` maps each of lid.176's 176 codes to a config:
``{"fr": {"Latn": "fra_Latn"}, "sr": {"Cyrl": "srp_Cyrl", "Latn": "srp_Latn"}, ...}``,
the first script listed being the language's usual one (the one with most words in
FineWeb-2's ``fineweb2-language-distribution.csv``). A lid.176 code without a config maps
to ``{}``: it takes the defaults (the README says which those are).
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parent.parent / "datacurate" / "resources" / "langrules" / "fineweb2.json"
ISO = "/usr/share/iso-codes/json/iso_639-3.json"

# lid.176's labels are Wikipedia's language codes: where one names a macrolanguage or a
# code ISO 639-3 gives another language, FineWeb-2's config of the language that
# Wikipedia edition is written in (individual language of the macrolanguage)
WIKI_TO_ISO3 = {
    "als": "gsw",  # Alemannic Wikipedia (ISO "als" is Tosk Albanian)
    "sq": "als",  # Albanian -> Tosk, the standard
    "ar": "arb", "fa": "fas", "ms": "zsm", "sw": "swh", "et": "ekk", "lv": "lvs", "uz": "uzn", "az": "azj",
    "mn": "khk", "ne": "npi", "no": "nob", "yi": "ydd", "or": "ory", "gn": "gug", "mg": "plt", "ps": "pbt",
    "ku": "kmr", "qu": "quy", "zh": "cmn", "bh": "bho", "eml": "egl", "tl": "fil", "kv": "kpv",
    "sh": "hrv",  # Serbo-Croatian Wikipedia: Latin script; FineWeb-2 has no hbs config
}


def git_show(repo: str, path: str) -> str:
    return subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], check=True, capture_output=True,
                          text=True).stdout


def main(repo: str) -> None:
    import fasttext

    model = Path(__file__).resolve().parent.parent / "datacurate" / "models" / "lid.176.ftz"
    fasttext.FastText.eprint = lambda *a, **k: None
    lid_codes = sorted(lab[9:] for lab in fasttext.load_model(str(model)).get_labels())
    names = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", "HEAD", "configs/"], check=True,
                           capture_output=True, text=True).stdout.split()
    words = {}
    for row in csv.DictReader(io.StringIO(git_show(repo, "fineweb2-language-distribution.csv"))):
        if row["split"] == "train" and not row["subset"].endswith("_removed") and row["words"] != "-":
            words[row["subset"]] = int(row["words"])
    configs = {}
    for name in names:
        key = Path(name).stem
        cfg = yaml.safe_load(git_show(repo, name))
        configs[key] = {
            "language_score": cfg["language_score"],
            "dup_line_frac": cfg["dup_line_frac"],
            "top_n_grams": {int(n): v for n, v in cfg["top_n_grams"]},
            "dup_n_grams": {int(n): v for n, v in cfg["dup_n_grams"]},
            "line_punct_thr": cfg["line_punct_thr"],
            "new_line_ratio": cfg["new_line_ratio"],
            "min_avg_word_length": cfg["min_avg_word_length"],
            "max_avg_word_length": cfg["max_avg_word_length"],
            "max_non_alpha_words_ratio": cfg["max_non_alpha_words_ratio"],
            "stopwords": cfg["stopwords"],
        }
    iso = {e["alpha_2"]: e["alpha_3"] for e in json.load(open(ISO))["639-3"] if "alpha_2" in e}
    lid176 = {}
    for code in lid_codes:
        iso3 = WIKI_TO_ISO3.get(code) or iso.get(code) or code
        scripts = sorted((k for k in configs if k.split("_")[0] == iso3), key=lambda k: -words.get(k, 0))
        lid176[code] = {k.split("_")[1]: k for k in scripts}
    missing = [c for c, s in lid176.items() if not s]
    print(f"{len(configs)} configs; lid.176 codes with one: {len(lid_codes) - len(missing)}; "
          f"without (defaults): {len(missing)} {missing}")
    commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    doc = {"source": f"https://github.com/huggingface/fineweb-2 configs/ at {commit} (Apache-2.0)",
           "lid176": lid176, "configs": configs}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
