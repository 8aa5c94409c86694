"""One module per stage; the registry (:mod:`datacurate.registry`) names them."""
