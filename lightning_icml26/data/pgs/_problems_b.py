"""Problems 16-30 of the mutant suite: (name, spec, signature, reference, public tests, properties, strategy)."""

from __future__ import annotations

INTS = "st.integers(-100, 100)"
LIST = f"st.lists({INTS}, max_size=12)"

PROBLEMS_B = [
    (
        "lcm",
        "Return the least common multiple of two positive integers a and b.",
        "def lcm(a: int, b: int) -> int:",
        """
def lcm(a, b):
    x, y = a, b
    while y != 0:
        x, y = y, x % y
    return a * b // x
""",
        [("(4, 6)", "12"), ("(3, 5)", "15")],
        """
def common_multiple(args, result):
    assert result > 0 and result % args[0] == 0 and result % args[1] == 0, 'not a common multiple'
def least(args, result):
    a, b = args
    assert not any(m % a == 0 and m % b == 0 for m in range(1, result)), 'a smaller one exists'
""",
        "st.tuples(st.integers(1, 60), st.integers(1, 60))",
    ),
    (
        "digit_sum",
        "Return the sum of the decimal digits of n >= 0.",
        "def digit_sum(n: int) -> int:",
        """
def digit_sum(n):
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total
""",
        [("(123,)", "6"), ("(0,)", "0")],
        """
def casting_out_nines(args, result):
    assert (result - args[0]) % 9 == 0, 'differs from n modulo 9'
def bounded(args, result):
    assert 0 <= result <= 9 * len(str(args[0])), 'out of range for the number of digits'
""",
        "st.tuples(st.integers(0, 10 ** 9))",
    ),
    (
        "power",
        "Return b raised to the power e (e >= 0) by repeated squaring.",
        "def power(b: int, e: int) -> int:",
        """
def power(b, e):
    result = 1
    while e > 0:
        if e % 2 == 1:
            result *= b
        b *= b
        e //= 2
    return result
""",
        [("(2, 10)", "1024"), ("(3, 0)", "1")],
        """
def magnitude(args, result):
    b, e = args
    assert abs(result) == abs(b) ** e, 'wrong magnitude'
def sign(args, result):
    b, e = args
    assert (result < 0) == (b < 0 and e % 2 == 1), 'wrong sign'
""",
        "st.tuples(st.integers(-9, 9), st.integers(0, 20))",
    ),
    (
        "chunk",
        "Split xs into consecutive pieces of length k (k >= 1); the last piece may be shorter.",
        "def chunk(xs: list[int], k: int) -> list[list[int]]:",
        """
def chunk(xs, k):
    out = []
    for i in range(0, len(xs), k):
        out.append(xs[i:i + k])
    return out
""",
        [("([1, 2, 3, 4, 5], 2)", "[[1, 2], [3, 4], [5]]"), ("([], 3)", "[]")],
        """
def concatenation(args, result):
    assert [x for piece in result for x in piece] == args[0], 'pieces do not join back to xs'
def sizes(args, result):
    k = args[1]
    assert all(len(p) == k for p in result[:-1]) and all(1 <= len(p) <= k for p in result[-1:]), 'wrong sizes'
""",
        f"st.tuples({LIST}, st.integers(1, 5))",
    ),
    (
        "rotate_left",
        "Rotate xs left by k >= 0 positions: the first k items move to the end.",
        "def rotate_left(xs: list[int], k: int) -> list[int]:",
        """
def rotate_left(xs, k):
    if len(xs) == 0:
        return []
    k = k % len(xs)
    return xs[k:] + xs[:k]
""",
        [("([1, 2, 3, 4], 1)", "[2, 3, 4, 1]"), ("([1, 2], 0)", "[1, 2]")],
        """
def same_items(args, result):
    assert sorted(result) == sorted(args[0]), 'items changed'
def shifted(args, result):
    xs, k = args
    n = len(xs)
    assert all(result[(i - k) % n] == xs[i] for i in range(n)), 'not shifted by k'
""",
        f"st.tuples({LIST}, st.integers(0, 20))",
    ),
    (
        "count_vowels",
        "Return the number of vowels (a, e, i, o, u, either case) in s.",
        "def count_vowels(s: str) -> int:",
        """
def count_vowels(s):
    count = 0
    for ch in s.lower():
        if ch in 'aeiou':
            count += 1
    return count
""",
        [("('Hello',)", "2"), ("('xyz',)", "0")],
        """
def bounded(args, result):
    assert 0 <= result <= len(args[0]), 'count out of range'
def consonants_complement(args, result):
    assert result + sum(c.lower() not in 'aeiou' for c in args[0]) == len(args[0]), 'vowels and others do not add up'
""",
        "st.tuples(st.text(alphabet='abeiouxyzAE', max_size=15))",
    ),
    (
        "clamp",
        "Return x limited to the interval [lo, hi] (lo <= hi).",
        "def clamp(x: int, lo: int, hi: int) -> int:",
        """
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
""",
        [("(5, 0, 10)", "5"), ("(-3, 0, 10)", "0")],
        """
def inside(args, result):
    assert args[1] <= result <= args[2], 'outside [lo, hi]'
def identity_inside(args, result):
    x, lo, hi = args
    assert not lo <= x <= hi or result == x, 'changed a value already inside'
def nearest(args, result):
    assert result in args, 'not x, lo or hi'
""",
        "st.tuples(st.integers(-50, 50), st.integers(-50, 0), st.integers(0, 50))",
    ),
    (
        "kth_smallest",
        "Return the k-th smallest item (1-based, counting repeats) of the non-empty list xs, 1 <= k <= len(xs).",
        "def kth_smallest(xs: list[int], k: int) -> int:",
        """
def kth_smallest(xs, k):
    ys = list(xs)
    for i in range(k):
        m = i
        for j in range(i + 1, len(ys)):
            if ys[j] < ys[m]:
                m = j
        ys[i], ys[m] = ys[m], ys[i]
    return ys[k - 1]
""",
        [("([3, 1, 2], 2)", "2"), ("([5], 1)", "5")],
        """
def is_member(args, result):
    assert result in args[0], 'not an item of xs'
def rank(args, result):
    xs, k = args
    below = sum(x < result for x in xs)
    assert below <= k - 1 < below + xs.count(result), 'wrong rank'
""",
        "st.lists(st.integers(-20, 20), min_size=1, max_size=12).flatmap("
        "lambda xs: st.tuples(st.just(xs), st.integers(1, len(xs))))",
    ),
    (
        "run_length",
        "Return the run-length encoding of s as a list of (character, run length) pairs.",
        "def run_length(s: str) -> list[tuple[str, int]]:",
        """
def run_length(s):
    out = []
    i = 0
    while i < len(s):
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        out.append((s[i], j - i))
        i = j
    return out
""",
        [("('aab',)", "[('a', 2), ('b', 1)]"), ("('',)", "[]")],
        """
def decodes(args, result):
    assert ''.join(c * n for c, n in result) == args[0], 'does not decode to s'
def maximal_runs(args, result):
    assert all(n >= 1 for _, n in result), 'an empty run'
    assert all(result[i][0] != result[i + 1][0] for i in range(len(result) - 1)), 'runs not maximal'
""",
        "st.tuples(st.text(alphabet='ab', max_size=12))",
    ),
    (
        "interleave",
        "Alternate items of xs and ys (xs first); the rest of the longer list follows.",
        "def interleave(xs: list[int], ys: list[int]) -> list[int]:",
        """
def interleave(xs, ys):
    out = []
    i = 0
    while i < len(xs) or i < len(ys):
        if i < len(xs):
            out.append(xs[i])
        if i < len(ys):
            out.append(ys[i])
        i += 1
    return out
""",
        [("([1, 2], [3, 4])", "[1, 3, 2, 4]"), ("([1], [])", "[1]")],
        """
def length(args, result):
    assert len(result) == len(args[0]) + len(args[1]), 'wrong length'
def alternates(args, result):
    xs, ys = args
    n = min(len(xs), len(ys))
    assert result[0:2 * n:2] == xs[:n] and result[1:2 * n:2] == ys[:n], 'does not alternate'
""",
        f"st.tuples({LIST}, {LIST})",
    ),
    (
        "isqrt",
        "Return the integer square root of n >= 0: the largest r with r * r <= n.",
        "def isqrt(n: int) -> int:",
        """
def isqrt(n):
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid * mid <= n:
            lo = mid
        else:
            hi = mid - 1
    return lo
""",
        [("(10,)", "3"), ("(16,)", "4")],
        """
def below(args, result):
    assert result >= 0 and result * result <= args[0], 'square above n'
def largest(args, result):
    assert (result + 1) ** 2 > args[0], 'a larger root exists'
""",
        "st.tuples(st.integers(0, 10 ** 6))",
    ),
    (
        "max_subarray",
        "Return the largest sum of a non-empty contiguous slice of the non-empty list xs.",
        "def max_subarray(xs: list[int]) -> int:",
        """
def max_subarray(xs):
    best = xs[0]
    current = 0
    for x in xs:
        current = max(x, current + x)
        best = max(best, current)
    return best
""",
        [("([1, -2, 3, 4],)", "7"), ("([-3, -1],)", "-1")],
        """
def at_least_items(args, result):
    assert result >= max(args[0]) and result >= sum(args[0]), 'below an item or the whole sum'
def achieved(args, result):
    xs = args[0]
    sums = {sum(xs[i:j]) for i in range(len(xs)) for j in range(i + 1, len(xs) + 1)}
    assert result in sums, 'no slice has this sum'
""",
        "st.tuples(st.lists(st.integers(-20, 20), min_size=1, max_size=12))",
    ),
    (
        "caesar",
        "Shift every lowercase letter of s by k places in the alphabet, wrapping around.",
        "def caesar(s: str, k: int) -> str:",
        """
def caesar(s, k):
    out = []
    for ch in s:
        out.append(chr((ord(ch) - 97 + k) % 26 + 97))
    return ''.join(out)
""",
        [("('abc', 1)", "'bcd'"), ("('z', 2)", "'b'")],
        """
def letters(args, result):
    assert len(result) == len(args[0]), 'length changed'
    assert all('a' <= c <= 'z' for c in result), 'not lowercase letters'
def shift(args, result):
    s, k = args
    assert all((ord(r) - ord(c)) % 26 == k % 26 for r, c in zip(result, s)), 'not shifted by k'
""",
        "st.tuples(st.text(alphabet='abcxyz', max_size=10), st.integers(-30, 30))",
    ),
    (
        "is_sorted",
        "Return True when xs is in non-decreasing order, else False.",
        "def is_sorted(xs: list[int]) -> bool:",
        """
def is_sorted(xs):
    for i in range(len(xs) - 1):
        if xs[i] > xs[i + 1]:
            return False
    return True
""",
        [("([1, 2, 2],)", "True"), ("([2, 1],)", "False")],
        """
def true_has_no_descent(args, result):
    xs = args[0]
    assert not result or all(xs[i] <= xs[i + 1] for i in range(len(xs) - 1)), 'True with a descent'
def false_has_descent(args, result):
    xs = args[0]
    assert result or any(xs[i] > xs[i + 1] for i in range(len(xs) - 1)), 'False without a descent'
""",
        "st.tuples(st.lists(st.integers(0, 5), max_size=8))",
    ),
    (
        "remove_value",
        "Return xs without the items equal to v, keeping the order of the others.",
        "def remove_value(xs: list[int], v: int) -> list[int]:",
        """
def remove_value(xs, v):
    return [x for x in xs if x != v]
""",
        [("([1, 2, 1, 3], 1)", "[2, 3]"), ("([4], 5)", "[4]")],
        """
def v_gone(args, result):
    assert args[1] not in result, 'v is still there'
def others_kept(args, result):
    assert len(result) == len(args[0]) - args[0].count(args[1]), 'other items lost'
""",
        "st.tuples(st.lists(st.integers(0, 5), max_size=12), st.integers(0, 5))",
    ),
]
