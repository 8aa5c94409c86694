"""One module per input format behind one contract (:mod:`datacurate.readers.base`):
``jsonl`` (JSON lines, and a ``.json`` file holding one array of records), ``parquet``,
``warc`` (WARC, WET and ARC). :mod:`datacurate.formats.io` plans the read tasks and picks the
module; a new format is one module plus one line in ``datacurate.formats.io.READERS``."""
