"""Rebuild passages.json: real translated messages from Debian 12's own .mo catalogues.

Run on a Debian 12 machine with apt, dpkg, libgtk2.0-common and iso-codes installed:
``python tests/data/words/build_passages.py``. Each passage is one translated message
(help screens with option tables are skipped); ``source`` names the package and catalogue.
"""

import gettext
import json
import re
from pathlib import Path

# (language, script, catalogues): the packages' copyright files give the licences
# (apt GPL-2+, dpkg GPL-2+, libgtk2.0-common LGPL-2+, iso-codes LGPL-2.1+)
WANT = [
    ("zh", "Hans", ["zh_CN/apt", "zh_CN/dpkg"]),
    ("ja", "Jpan", ["ja/apt", "ja/dpkg"]),
    ("th", "Thai", ["th/apt", "th/dpkg"]),
    ("km", "Khmr", ["km/apt", "km/dpkg"]),
    ("my", "Mymr", ["my/gtk20"]),
    ("dz", "Tibt", ["dz/apt", "dz/dpkg"]),
    ("lo", "Laoo", ["lo/iso_3166-1"]),
    ("ko", "Hang", ["ko/apt"]),
    ("en", "Latn", []),
]
PACKAGE = {"apt": "apt", "dpkg": "dpkg", "gtk20": "libgtk2.0-common", "iso_3166-1": "iso-codes"}


def messages(cat: str):
    lang, name = cat.split("/")
    with open(f"/usr/share/locale/{lang}/LC_MESSAGES/{name}.mo", "rb") as f:
        t = gettext.GNUTranslations(f)
    for msgid, text in t._catalog.items():
        if not isinstance(msgid, str) or not msgid or not isinstance(text, str):
            continue
        if "%" in text or "\n  -" in text or "--" in text or "<" in text:
            continue
        yield name, msgid, text


def main():
    out = {}
    for lang, script, cats in WANT:
        found = [m for cat in cats for m in messages(cat)]
        if lang == "lo":  # only country names in Lao: join them into lines of ten
            names = sorted(t for _, _, t in found)
            found = [("iso_3166-1", "", " ".join(names[i:i + 10])) for i in range(0, 80, 10)]
        if lang == "en":  # the English originals of the Thai messages
            found = [(n, "", m) for n, m, _ in messages("th/apt")]
        found.sort(key=lambda m: -len(m[2]))
        out[lang] = {"script": script, "passages": [re.sub(r"[ \t]+\n", "\n", t) for _, _, t in found[:8]],
                     "source": sorted({f"Debian 12 {PACKAGE[n]}: {n}.mo" for n, _, _ in found[:8]})}
    Path(__file__).with_name("passages.json").write_text(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
