# JupyterLab for memlab's notebooks: `make lab` starts it with this file
# (.venv/bin/jupyter lab --config=jupyter_server_config.py notebooks/). Saving a tracked notebook
# (autosave included) writes it as the repository stores it: no outputs, the installed kernel's
# name, so using the notebooks leaves `git status` clean.
c = get_config()  # noqa: F821  (provided by Jupyter when it reads this file)
c.ContentsManager.pre_save_hook = "memlab.app.notebooks.keep_clean"
