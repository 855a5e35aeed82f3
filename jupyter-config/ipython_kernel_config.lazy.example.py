# Load hindsight_magic on first use of one of its magics, and set a few of its settings.
#
# Copy to ~/.ipython/profile_default/ipython_kernel_config.py (or append to the one you have).
# Kernels start as fast as without the extension; the first %retain, %%reflect or %hindsight
# loads it (and auto-retain starts from that cell). Installing hindsight-magic changes no config.

c = get_config()  # noqa: F821 - provided by IPython when it reads this file

c.MagicsManager.lazy_magics = {
    "retain": "hindsight_magic",
    "reflect": "hindsight_magic",
    "hindsight": "hindsight_magic",
    # Not recall: IPython has its own %recall (input history). IPython's wins until the
    # extension is loaded, so the first %recall of a kernel would not search memory. After any
    # of the magics above, %recall is hindsight_magic's.
}

# Settings: these override the environment (HINDSIGHT_<NAME>), and `%hindsight config NAME=VALUE`
# overrides them for one session; `%hindsight config` lists every setting and its source.
c.HindsightMagics.retain_every_n_cells = 5  # auto-retain after every 5 cells (default 3)
c.HindsightMagics.recall_budget = "mid"  # low | mid | high
# c.HindsightMagics.scoping = "per-project"  # global | per-project | per-project-tagged
# c.HindsightMagics.bank_prefix = "analytics"  # banks become analytics-jupyter, …
# c.HindsightMagics.auto_retain = False  # only what you %retain yourself
# The API key is never set here: put HINDSIGHT_API_KEY in the kernel's environment.
