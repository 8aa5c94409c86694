"""The one package that imports Ray."""
