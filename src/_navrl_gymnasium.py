"""navrl's Gymnasium ids, registered when ``gymnasium`` is imported, without ``import navrl``.

Gymnasium >= 1.0 loads no plugin entry points, so ``gymnasium.make("navrl/PhoneWorld-v0")``
would need ``import navrl`` first. Installing navrl (setup.py: wheel and editable installs alike)
puts ``_navrl_gymnasium.pth`` at the root of site-packages. At interpreter start-up it runs
:data:`PTH_CODE`: a finder on ``sys.meta_path`` that answers for ``gymnasium`` only, and nothing
else; neither this module nor gymnasium, numpy or navrl is imported then. When ``gymnasium`` is
imported, the finder imports this module, whose :func:`find_spec` lets that import finish,
registers the ids of :data:`ENVS` by name (string entry points: the world itself is imported on
``gymnasium.make``) and takes the finder off ``sys.meta_path``.

This module is top-level (not ``navrl._…``) because importing anything under ``navrl`` runs
``navrl/__init__.py``, which imports gymnasium. Nothing here stops Python or gymnasium from
starting: a failure is one warning, when gymnasium is imported. ``navrl.register_envs`` (run on
``import navrl``) calls :func:`register` too; both skip an id already registered.
"""
import sys

PHONE_WORLD_ENV = "navrl/PhoneWorld-v0"
"""The phone world's Gymnasium id (:class:`navrl.worlds.phone.env.PhoneWorldEnv`)."""

ENVS = {PHONE_WORLD_ENV: "navrl.worlds.phone.env:PhoneWorldEnv"}
"""Each Gymnasium id navrl registers, with its entry point (``module:attribute``)."""

PTH_CODE = """\
class NavrlGymnasiumHook:
 navrl_gymnasium_hook = True
 def find_spec(self, name, path=None, target=None):
  if name != 'gymnasium':
   return None
  try:
   import _navrl_gymnasium
   return _navrl_gymnasium.find_spec(self, name, path, target)
  except ImportError:
   return None
  except Exception as e:
   import warnings
   warnings.warn(f'navrl: its Gymnasium hook failed ({e!r}): import navrl before gymnasium.make', RuntimeWarning)
   return None
if not any(getattr(f, 'navrl_gymnasium_hook', False) for f in sys.meta_path):
 sys.meta_path.insert(0, NavrlGymnasiumHook())
"""
"""What ``_navrl_gymnasium.pth`` runs at start-up (its one line: ``import sys; exec(PTH_CODE)``,
which tests/test_navrl_gymnasium.py checks). Every start of Python in the environment pays for
it, so it stays this small, and it must not raise. An editable install keeps the .pth it was
installed with, so an older one may meet a newer :func:`find_spec`: whatever goes wrong there is
a warning. A change here needs ``pip install -e .`` again (``make setup`` sees the change)."""


def register(gymnasium) -> None:
    """Register each id of :data:`ENVS` in the imported ``gymnasium`` module's registry, by name,
    unless it is there already (so a second call is silent: Gymnasium warns on overriding)."""
    for env_id, entry_point in ENVS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


def _warn(e: Exception) -> None:
    import warnings
    warnings.warn(f"navrl: could not register {', '.join(ENVS)} with Gymnasium ({e!r}); "
                  f"`import navrl` before gymnasium.make", RuntimeWarning, stacklevel=3)


def find_spec(finder, fullname: str, path=None, target=None):
    """``finder.find_spec`` for the start-up finder ``finder``: gymnasium's spec as the other
    finders on ``sys.meta_path`` give it, its loader wrapped so that navrl's ids are registered
    right after gymnasium's ``__init__`` has run. ``None`` (the import goes on without navrl)
    where gymnasium is not installed or this fails."""
    try:
        for other in list(sys.meta_path):
            find = getattr(other, "find_spec", None)
            if find is None or getattr(other, "navrl_gymnasium_hook", False):
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _RegisteringLoader(finder, spec.loader)
        return spec
    except Exception as e:
        _warn(e)
        return None


class _RegisteringLoader:
    """Runs gymnasium's own loader, then registers navrl's ids in the module it made and takes
    the start-up finder off ``sys.meta_path``."""

    def __init__(self, finder, loader):
        self.finder, self.loader = finder, loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        # the module keeps gymnasium's loader (resources, source, reload), not this wrapper
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)   # an error here is gymnasium's: it propagates, the finder stays
        try:
            sys.meta_path.remove(self.finder)
        except ValueError:
            pass
        try:
            register(module)
        except Exception as e:  # never break `import gymnasium`: `import navrl` still registers
            _warn(e)

    def __getattr__(self, name):
        return getattr(self.loader, name)
