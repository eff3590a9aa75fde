"""Problems 1-15 of the mutant suite: (name, spec, signature, reference, public tests, properties, strategy)."""

from __future__ import annotations

INTS = "st.integers(-100, 100)"
LIST = f"st.lists({INTS}, max_size=12)"

PROBLEMS_A = [
    (
        "sort_list",
        "Return a new list with the integers of xs in non-decreasing order.",
        "def sort_list(xs: list[int]) -> list[int]:",
        """
def sort_list(xs):
    out = list(xs)
    for i in range(1, len(out)):
        j = i
        while j > 0 and out[j - 1] > out[j]:
            out[j - 1], out[j] = out[j], out[j - 1]
            j -= 1
    return out
""",
        [("([3, 1, 2],)", "[1, 2, 3]"), ("([5, -1],)", "[-1, 5]")],
        """
def non_decreasing(args, result):
    assert all(result[i] <= result[i + 1] for i in range(len(result) - 1)), 'not in order'
def same_items(args, result):
    from collections import Counter
    assert Counter(result) == Counter(args[0]), 'items differ from the input'
""",
        f"st.tuples({LIST})",
    ),
    (
        "gcd",
        "Return the greatest common divisor of two positive integers a and b.",
        "def gcd(a: int, b: int) -> int:",
        """
def gcd(a, b):
    while b != 0:
        a, b = b, a % b
    return a
""",
        [("(12, 18)", "6"), ("(7, 5)", "1")],
        """
def divides_both(args, result):
    assert result > 0 and args[0] % result == 0 and args[1] % result == 0, 'not a common divisor'
def greatest(args, result):
    a, b = args
    assert not any(a % d == 0 and b % d == 0 for d in range(result + 1, min(a, b) + 1)), 'a larger one exists'
""",
        "st.tuples(st.integers(1, 2000), st.integers(1, 2000))",
    ),
    (
        "factorise",
        "Return the prime factors of n >= 2 in non-decreasing order, with multiplicity.",
        "def factorise(n: int) -> list[int]:",
        """
def factorise(n):
    factors = []
    d = 2
    while d * d <= n:
        while n % d == 0:
            factors.append(d)
            n //= d
        d += 1
    if n > 1:
        factors.append(n)
    return factors
""",
        [("(12,)", "[2, 2, 3]"), ("(7,)", "[7]")],
        """
def product_is_n(args, result):
    p = 1
    for f in result:
        p *= f
    assert p == args[0], 'product differs from n'
def all_prime(args, result):
    assert all(f >= 2 and all(f % d for d in range(2, int(f ** 0.5) + 1)) for f in result), 'a factor is not prime'
def ordered(args, result):
    assert result == sorted(result), 'factors out of order'
""",
        "st.tuples(st.integers(2, 5000))",
    ),
    (
        "dedup",
        "Return the items of xs without repeats, keeping the first occurrence of each, in order.",
        "def dedup(xs: list[int]) -> list[int]:",
        """
def dedup(xs):
    seen = set()
    out = []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out
""",
        [("([1, 2, 1, 3],)", "[1, 2, 3]"), ("([],)", "[]")],
        """
def no_repeats(args, result):
    assert len(set(result)) == len(result), 'an item repeats'
def same_set(args, result):
    assert set(result) == set(args[0]), 'items differ from the input'
def first_order(args, result):
    firsts = sorted(set(args[0]), key=args[0].index)
    assert result == firsts, 'not in order of first occurrence'
""",
        "st.tuples(st.lists(st.integers(0, 9), max_size=12))",
    ),
    (
        "merge",
        "Merge two lists sorted in non-decreasing order into one sorted list.",
        "def merge(xs: list[int], ys: list[int]) -> list[int]:",
        """
def merge(xs, ys):
    i = j = 0
    out = []
    while i < len(xs) and j < len(ys):
        if xs[i] <= ys[j]:
            out.append(xs[i])
            i += 1
        else:
            out.append(ys[j])
            j += 1
    out.extend(xs[i:])
    out.extend(ys[j:])
    return out
""",
        [("([1, 3], [2, 4])", "[1, 2, 3, 4]"), ("([1, 2], [3])", "[1, 2, 3]")],
        """
def sorted_output(args, result):
    assert all(result[i] <= result[i + 1] for i in range(len(result) - 1)), 'not in order'
def all_items(args, result):
    from collections import Counter
    assert Counter(result) == Counter(args[0]) + Counter(args[1]), 'items lost or added'
""",
        f"st.tuples({LIST}.map(sorted), {LIST}.map(sorted))",
    ),
    (
        "reverse_list",
        "Return a new list with the items of xs in reverse order.",
        "def reverse_list(xs: list[int]) -> list[int]:",
        """
def reverse_list(xs):
    out = []
    i = len(xs) - 1
    while i >= 0:
        out.append(xs[i])
        i -= 1
    return out
""",
        [("([1, 2, 3],)", "[3, 2, 1]"), ("([4],)", "[4]")],
        """
def same_length(args, result):
    assert len(result) == len(args[0]), 'length changed'
def mirrored(args, result):
    xs = args[0]
    assert all(result[i] == xs[len(xs) - 1 - i] for i in range(min(len(xs), len(result)))), 'not mirrored'
""",
        f"st.tuples({LIST})",
    ),
    (
        "max_element",
        "Return the largest integer of the non-empty list xs.",
        "def max_element(xs: list[int]) -> int:",
        """
def max_element(xs):
    best = xs[0]
    for x in xs[1:]:
        if x > best:
            best = x
    return best
""",
        [("([1, 5, 3],)", "5"), ("([-2, -7],)", "-2")],
        """
def is_member(args, result):
    assert result in args[0], 'not an item of xs'
def is_upper_bound(args, result):
    assert all(x <= result for x in args[0]), 'an item is larger'
""",
        f"st.tuples(st.lists({INTS}, min_size=1, max_size=12))",
    ),
    (
        "min_index",
        "Return the index of the first occurrence of the smallest item of the non-empty list xs.",
        "def min_index(xs: list[int]) -> int:",
        """
def min_index(xs):
    best = 0
    for i in range(1, len(xs)):
        if xs[i] < xs[best]:
            best = i
    return best
""",
        [("([3, 1, 2],)", "1"), ("([4, 5],)", "0")],
        """
def in_range(args, result):
    assert 0 <= result < len(args[0]), 'index out of range'
def is_minimum(args, result):
    assert all(x >= args[0][result] for x in args[0]), 'a smaller item exists'
def is_first(args, result):
    assert all(x > args[0][result] for x in args[0][:result]), 'an earlier minimum exists'
""",
        "st.tuples(st.lists(st.integers(-20, 20), min_size=1, max_size=12))",
    ),
    (
        "running_sum",
        "Return the running (prefix) sums of xs: element i is xs[0] + ... + xs[i].",
        "def running_sum(xs: list[int]) -> list[int]:",
        """
def running_sum(xs):
    out = []
    total = 0
    for x in xs:
        total += x
        out.append(total)
    return out
""",
        [("([1, 2, 3],)", "[1, 3, 6]"), ("([],)", "[]")],
        """
def same_length(args, result):
    assert len(result) == len(args[0]), 'length changed'
def differences(args, result):
    xs = args[0]
    assert all(result[i] - (result[i - 1] if i else 0) == xs[i] for i in range(len(xs))), 'steps differ from xs'
""",
        f"st.tuples({LIST})",
    ),
    (
        "count_occurrences",
        "Return how many items of xs are equal to v.",
        "def count_occurrences(xs: list[int], v: int) -> int:",
        """
def count_occurrences(xs, v):
    count = 0
    for x in xs:
        if x == v:
            count += 1
    return count
""",
        [("([1, 2, 1], 1)", "2"), ("([3], 4)", "0")],
        """
def bounded(args, result):
    assert 0 <= result <= len(args[0]), 'count out of range'
def removal(args, result):
    assert len([x for x in args[0] if x != args[1]]) == len(args[0]) - result, 'removing v leaves another length'
""",
        "st.tuples(st.lists(st.integers(0, 5), max_size=12), st.integers(0, 5))",
    ),
    (
        "is_palindrome",
        "Return True when the string s reads the same backwards, else False.",
        "def is_palindrome(s: str) -> bool:",
        """
def is_palindrome(s):
    i = 0
    j = len(s) - 1
    while i < j:
        if s[i] != s[j]:
            return False
        i += 1
        j -= 1
    return True
""",
        [("('aba',)", "True"), ("('ab',)", "False")],
        """
def true_means_mirror(args, result):
    assert not result or args[0] == args[0][::-1], 'True for a non-palindrome'
def mirror_means_true(args, result):
    assert result or args[0] != args[0][::-1], 'False for a palindrome'
""",
        "st.tuples(st.text(alphabet='ab', max_size=10))",
    ),
    (
        "fibonacci",
        "Return the n-th Fibonacci number, with fibonacci(0) = 0 and fibonacci(1) = 1.",
        "def fibonacci(n: int) -> int:",
        """
def fibonacci(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
""",
        [("(0,)", "0"), ("(7,)", "13")],
        """
def is_fibonacci(args, result):
    import math
    r = result
    assert r >= 0 and any(math.isqrt(5 * r * r + s) ** 2 == 5 * r * r + s for s in (4, -4)), 'not a Fibonacci number'
def grows(args, result):
    n = args[0]
    assert n < 5 or n <= result < 2 ** n, 'wrong size for n'
""",
        "st.tuples(st.integers(0, 60))",
    ),
    (
        "factorial",
        "Return n! for n >= 0.",
        "def factorial(n: int) -> int:",
        """
def factorial(n):
    result = 1
    for k in range(2, n + 1):
        result *= k
    return result
""",
        [("(0,)", "1"), ("(4,)", "24")],
        """
def divisible(args, result):
    assert result > 0 and all(result % k == 0 for k in range(1, args[0] + 1)), 'not a multiple of every k <= n'
def no_large_prime(args, result):
    n = args[0]
    primes = [p for p in range(max(n + 1, 2), 2 * n + 3) if all(p % d for d in range(2, p))]
    assert all(result % p for p in primes), 'divisible by a prime above n'
""",
        "st.tuples(st.integers(0, 20))",
    ),
    (
        "is_prime",
        "Return True when n is a prime number, else False.",
        "def is_prime(n: int) -> bool:",
        """
def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True
""",
        [("(7,)", "True"), ("(9,)", "False")],
        """
def true_has_no_divisor(args, result):
    n = args[0]
    assert not result or (n >= 2 and all(n % d for d in range(2, n))), 'True for a composite'
def false_has_divisor(args, result):
    n = args[0]
    assert result or n < 2 or any(n % d == 0 for d in range(2, n)), 'False for a prime'
""",
        "st.tuples(st.integers(-5, 500))",
    ),
    (
        "binary_search",
        "Return an index i with xs[i] == v in the sorted list xs, or -1 when v is absent.",
        "def binary_search(xs: list[int], v: int) -> int:",
        """
def binary_search(xs, v):
    lo = 0
    hi = len(xs) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if xs[mid] == v:
            return mid
        if xs[mid] < v:
            lo = mid + 1
        else:
            hi = mid - 1
    return -1
""",
        [("([1, 3, 5, 7], 5)", "2"), ("([1, 3], 2)", "-1")],
        """
def found_is_v(args, result):
    xs, v = args
    assert result == -1 or (0 <= result < len(xs) and xs[result] == v), 'index does not hold v'
def absent_means_missing(args, result):
    assert result != -1 or args[1] not in args[0], '-1 but v is present'
""",
        "st.tuples(st.lists(st.integers(0, 30), max_size=12).map(sorted), st.integers(0, 30))",
    ),
]
