"""Seed 000's printed table, one copy: scenarios/seeds/test_seed000.py checks every cell of a run alone,
scenarios/concurrency/test_concurrency.py the same cells of runs done at once."""

# stop reason, steps, tool calls, tokens, seconds, effects
SEED_TABLE = {
    "A normal run": ("done", 5, 3, 708, 10.0, [("refund", "ord_1001", 3000), ("email", "ord_1001")]),
    "B same call repeated": ("repeated_call", 3, 2, 192, 5.3, []),
    "C new ids every step": ("no_progress", 3, 3, 192, 5.7, []),
    "D large results": ("max_tokens", 4, 4, 3584, 9.2, []),
    "E slow model calls": ("deadline", 5, 3, 550, 30.0, [("refund", "ord_1001", 3000), ("email", "ord_1001")]),
    "F step cap too low": ("max_steps", 3, 2, 393, 6.1, [("refund", "ord_1001", 3000)]),
    "G refund needs approval": ("needs_approval", 3, 2, 393, 6.1, []),
    "H write times out": ("unknown_outcome", 3, 2, 393, 30.0, [("refund", "ord_1001", 3000)]),
}
