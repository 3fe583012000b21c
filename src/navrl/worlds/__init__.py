"""Worlds: the environments navrl trains in, each one package beside the framework.

* :mod:`navrl.worlds.phone` — the embedded phone world (simulator, apps, task templates,
  expert, suites, oracle judges, its Gymnasium environment);
* :mod:`navrl.worlds.web` — web apps and MiniWoB++ in Chromium (suites, scripted solutions,
  the page judge).

A world registers its suites, judges and hooks in :mod:`navrl.tasks.registry` when it is
imported; the framework reaches worlds only through that registry. Worlds do not import
each other (an import-linter contract).
"""
