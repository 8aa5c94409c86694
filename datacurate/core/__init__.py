"""Leaf modules: no datacurate import below them (errors, coercion, the column schema, dict
sums, the ablation's interval and curve arithmetic, and the sandbox: process supervision
that knows no text or stage)."""
