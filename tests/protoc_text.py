"""protoc_text.py - protoc's text output (protoc --decode) read into Python:
the one parser of the Perfetto and pprof checkers (tests/perfetto/check_trace.py,
tests/pprof/check_pprof.py)."""
from collections import defaultdict


def unquote(s):
    # protoc prints strings C-escaped: \", \\, \n, octal \ooo
    out = bytearray()
    i = 1
    b = s.encode("utf-8", "surrogateescape")
    end = len(b) - 1
    while i < end:
        c = b[i]
        if c == 0x5C and i + 1 < end:
            n = b[i + 1]
            if 0x30 <= n <= 0x37:
                j = i + 1
                v = 0
                while j < end and j < i + 4 and 0x30 <= b[j] <= 0x37:
                    v = v * 8 + (b[j] - 0x30)
                    j += 1
                out.append(v & 0xFF)
                i = j
                continue
            m = {ord("n"): 10, ord("t"): 9, ord("r"): 13, ord("'"): 39, ord('"'): 34, ord("\\"): 92}
            out.append(m.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "replace")


def parse_text(lines):
    """protoc text output -> nested dicts of lists (field -> [values])."""
    root = defaultdict(list)
    stack = [root]
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line == "}":
            stack.pop()
            continue
        if line.endswith("{"):
            name = line[:-1].strip()
            child = defaultdict(list)
            stack[-1][name].append(child)
            stack.append(child)
            continue
        name, _, val = line.partition(":")
        val = val.strip()
        if val.startswith('"'):
            v = unquote(val)
        elif val in ("true", "false"):
            v = val == "true"
        else:
            try:
                v = int(val)
            except ValueError:
                try:
                    v = float(val)
                except ValueError:
                    v = val  # enum name
        stack[-1][name.strip()].append(v)
    return root


def one(msg, field, default=None):
    """The first value of a field, or default."""
    v = msg.get(field)
    return v[0] if v else default
