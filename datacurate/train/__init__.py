"""Training-side code: reading the token shards (``data``); the training loop builds on it."""
