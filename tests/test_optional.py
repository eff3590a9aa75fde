"""Optional dependencies: the plots extra's error message and the skip markers for --no-deps packages."""

from __future__ import annotations

import sys

import pytest

from lightning_icml26._optional import require_pyplot
from lightning_icml26.callbacks.metrics_plot import plot_history
from tests._support.skips import requires_module, requires_no_deps_package


def test_require_pyplot_returns_agg_pyplot():
    plt = require_pyplot()
    assert plt.__name__ == "matplotlib.pyplot"
    assert plt.get_backend().lower() == "agg"


def test_missing_matplotlib_names_the_plots_extra(monkeypatch, tmp_path):
    # A None entry in sys.modules makes `import matplotlib` raise ImportError, as when it is not installed.
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'lightning-icml26\[plots\]'"):
        require_pyplot()
    with pytest.raises(ImportError, match=r"lightning-icml26\[plots\]"):
        plot_history({"loss": [(0, 1.0)]}, tmp_path / "m.png")
    assert not (tmp_path / "m.png").exists()


def test_skip_markers_follow_installation():
    missing = requires_no_deps_package("surely_not_an_installed_module", "surely-not==1.0")
    assert missing.args == (True,)
    assert "pip install --no-deps surely-not==1.0" in missing.kwargs["reason"]
    assert requires_no_deps_package("torch", "torch").args == (False,)
    assert requires_module("surely_not_an_installed_module").args == (True,)
    assert requires_module("numpy").args == (False,)
