"""The parts of the WARC / ARC reader (:mod:`datacurate.readers.warc`), one concern each:
``plan`` (what a file is, its read tasks), ``warcfile`` (WARC records, with FastWARC),
``arcfile`` (ARC records), ``damage`` (gzip members checked whole, damage as rejects),
``http`` (HTTP encodings, decoding the payload) and ``record`` (the record they share)."""
