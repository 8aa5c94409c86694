"""Model wrappers (fastText) and the shipped language-ID model file (``lid.176.ftz``)."""
