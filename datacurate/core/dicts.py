"""Dict helpers with no dependency: the recursive sum that adds up per-task statistics."""


def merge(into: dict, other: dict) -> dict:
    """Recursively add ``other`` into ``into`` (numbers summed, dicts merged)."""
    for k, v in other.items():
        if isinstance(v, dict):
            merge(into.setdefault(k, {}), v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            into[k] = into.get(k, 0) + v
        else:
            into[k] = v
    return into
