"""Prose for the pages comparison.py renders: docs keep prose lines short
(at most 120 characters where a renderer writes them)."""
import re
import textwrap


def prose(text):
    """TEXT as lines of at most 120 characters (docs keep prose lines short)."""
    return textwrap.wrap(text, width=120, break_long_words=False, break_on_hyphens=False)


def wrap_page(text):
    """TEXT with every prose line over 120 characters wrapped (tables, code
    blocks and headings as they are; a list item's continuation indented
    under its text), as docs keep prose lines short."""
    out, code = [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            code = not code
        if code or len(line) <= 120 or line.lstrip().startswith(("|", "#", "![")):
            out.append(line)
            continue
        item = re.match(r"(\s*(?:[-*]|\d+\.) )", line)
        lead = " " * len(item.group(1)) if item else re.match(r"\s*", line).group(0)
        out.extend(textwrap.wrap(line, width=120, subsequent_indent=lead,
                                 break_long_words=False, break_on_hyphens=False))
    return "\n".join(out)
