"""text_norm holds the text clean-up shared by the starter corpus readers."""

import re
import unicodedata


def norm_text(s):
    """norm_text applies NFC and replaces odd spaces and control characters."""
    s = unicodedata.normalize("NFC", s)
    s = s.replace("\u00a0", " ").replace("\u2009", " ").replace("\u200b", "")
    s = s.replace("\r\n", "\n").replace("\r", "\n").replace("\t", "    ")
    s = "".join(c for c in s if c == "\n" or unicodedata.category(c)[0] != "C")
    return s


def paragraphs(text):
    """paragraphs splits text at blank lines and trims trailing spaces."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [l.rstrip() for l in block.split("\n")]
        while lines and not lines[0].strip():
            lines.pop(0)
        while lines and not lines[-1].strip():
            lines.pop()
        if lines:
            out.append("\n".join(lines))
    return out
