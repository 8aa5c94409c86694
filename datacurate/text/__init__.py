"""Text kernels: vectorised word, character and n-gram code over Arrow string arrays.

No stage, no engine, no I/O: the stages and the model wrappers build on these.
"""
