"""Handmade texts shared by the tests: real edited prose the default rules keep.

The prose is original (written for these tests), in the register of a magazine
piece: paragraphs of full sentences, quotations, '--' dashes and a few numbers.
"""

PROSE = """\
The harbour town had not seen a winter like it in forty years. By the second week of January the fishing boats were frozen into the inner basin, and the men who owned them spent their mornings in the café by the church, arguing about whether the ice would hold until March.

"It is not the cold that worries me," said the harbour master, a tall man with a careful way of speaking. "It is what the thaw will do to the old wall." He had written to the county council twice -- once in November and again at Christmas -- and had received no answer to either letter.

The wall in question was built in 1862 to protect the basin from the northern gales. It has been repaired many times since, most recently after the storm of 1987, when a section near the lighthouse gave way and three boats were lost. Engineers who inspected it that spring warned that the mortar was failing and that a hard frost followed by a quick thaw could open the old cracks again.

For now the town waits. The children skate on the shallow end of the basin, the baker has started delivering bread by sledge, and the council, according to a notice pinned to the church door, will meet to discuss the matter at the end of the month.
"""

PROSE_LINES = [line for line in PROSE.splitlines() if line.strip()]


def unique_words(n: int, length: int = 6, start: int = 0) -> list[str]:
    """``n`` distinct lowercase pseudo-words of ``length`` letters (no repeats, no stop words)."""
    out = []
    for i in range(start, start + n):
        w, k = "", i
        for _ in range(length - 1):
            w = "bcdfghjklmnprstvz"[k % 17] + w
            k //= 17
        out.append("q" + w)  # the leading 'q' keeps them clear of real words
    return out
