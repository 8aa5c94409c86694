"""Extract prose passages of man-db's ``man(1)`` page in every language Debian ships it in
(``manpages``/``man-db`` translations, GPL-2+) into tests/data/langrules/man1_man.jsonl.

Usage: ``python scripts/extract_man_prose.py`` (needs ``man`` and the translated pages under
/usr/share/man). A paragraph counts as prose when it is indented body text of at least
100 characters ending in a sentence end; the first 12 (not also in the English page) make its passage.
"""

import glob
import json
import re
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "langrules" / "man1_man.jsonl"
LID = {"pt_BR": "pt", "zh_CN": "zh", "zh_TW": "zh"}
ENDS = tuple(".!?。！？")


def paragraphs(page: str) -> list[str]:
    roff = subprocess.run(["zcat", page], capture_output=True, check=True).stdout
    text = subprocess.run(["groff", "-mandoc", "-Tutf8", "-k", "-rLL=2000n", "-P-cbou"], input=roff,
                          capture_output=True).stdout.decode("utf-8")
    paras = []
    for line in text.splitlines():
        s = line.strip()
        if line.startswith("       ") and len(s) >= 100 and s.endswith(ENDS) and "%" not in s:
            paras.append(re.sub(r"\s+", " ", s))
    return paras


english = set(paragraphs("/usr/share/man/man1/man.1.gz"))
# traditional Chinese: Debian has no zh_TW man(1); bash(1) (manpages-zh, GPL) instead
EXTRA = ["/usr/share/man/zh_TW/man1/bash.1.gz"]
rows = []
for page in sorted(glob.glob("/usr/share/man/*/man1/man.1.gz")) + EXTRA + ["/usr/share/man/man1/man.1.gz"]:
    d = page.split("/")[4]
    lang = "en" if d == "man1" else LID.get(d, d)
    # untranslated paragraphs stay English in a translated page: left out
    paras = [p for p in paragraphs(page) if lang == "en" or p not in english][:12]
    if len(paras) >= 6:
        # field names a pipeline does not add itself (lang, source are columns of a run)
        rows.append({"id": f"{Path(page).name.split('.')[0]}1-{d if d != 'man1' else 'en'}", "expected_lang": lang, "man_page": page,
                     "text": "\n\n".join(paras)})
OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
print(len(rows), [r["expected_lang"] for r in rows], OUT.stat().st_size)
