"""Two populations of runs side by side (``agentobs diff``).

    comparison.py  what changed between two populations of runs, and whether it is larger than chance
    diff_view.py   the comparison as lines and tables of text
    diff_html.py   the comparison as a plain HTML page (``templates/diff.html.j2``)
    _resample.py   bootstrap draws within each side, and Holm's correction

Imports ``report``, ``assess``, ``select`` and ``explorer.text`` (text made safe to show).
"""
