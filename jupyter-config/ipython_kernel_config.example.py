# Load hindsight_magic in every IPython kernel started with this profile (opt-in).
#
# Copy to ~/.ipython/profile_default/ipython_kernel_config.py (or append to the one you have).
# Every notebook then starts with %retain, %recall, %%reflect and %hindsight available, and
# auto-retain on (turn it off with HINDSIGHT_AUTO_RETAIN=false or the setting below).
# Nothing is loaded unless you copy this file: installing hindsight-magic changes no config.

c = get_config()  # noqa: F821 - provided by IPython when it reads this file

c.InteractiveShellApp.extensions = ["hindsight_magic"]
