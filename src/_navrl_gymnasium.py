"""navrl's Gymnasium ids, registered when ``gymnasium`` is imported, without ``import navrl``.

Gymnasium >= 1.0 loads no plugin entry points, so ``gymnasium.make("navrl/PhoneWorld-v0")``
would need ``import navrl`` first. navrl installs ``_navrl_gymnasium.pth`` at the root of
site-packages (setup.py, for wheel and editable installs alike); at interpreter start-up it runs
:func:`install`, which puts a finder on ``sys.meta_path`` and nothing else: gymnasium, numpy and
navrl are not imported. When ``gymnasium`` is imported, the finder lets that import finish, then
registers the ids of :data:`ENVS` by name (string entry points: the world itself is imported on
``gymnasium.make``) and takes itself off ``sys.meta_path``.

This module is top-level (not ``navrl._…``) because importing anything under ``navrl`` runs
``navrl/__init__.py``, which imports gymnasium. Nothing here may raise at start-up: a failure
to register is one warning, when gymnasium is imported. ``navrl.register_envs`` (run on
``import navrl``) calls :func:`register` too; both skip an id already registered.
"""
import sys

PHONE_WORLD_ENV = "navrl/PhoneWorld-v0"
"""The phone world's Gymnasium id (:class:`navrl.worlds.phone.env.PhoneWorldEnv`)."""

ENVS = {PHONE_WORLD_ENV: "navrl.worlds.phone.env:PhoneWorldEnv"}
"""Each Gymnasium id navrl registers, with its entry point (``module:attribute``)."""


def register(gymnasium) -> None:
    """Register each id of :data:`ENVS` in the imported ``gymnasium`` module's registry, by name,
    unless it is there already (so a second call is silent: Gymnasium warns on overriding)."""
    for env_id, entry_point in ENVS.items():
        if env_id not in gymnasium.registry:
            gymnasium.register(id=env_id, entry_point=entry_point)


def _register_or_warn(gymnasium) -> None:
    try:
        register(gymnasium)
    except Exception as e:  # never break `import gymnasium`: say it once, `import navrl` still registers
        import warnings
        warnings.warn(f"navrl: could not register {', '.join(ENVS)} with Gymnasium ({e!r}); "
                      f"`import navrl` before gymnasium.make", RuntimeWarning, stacklevel=2)


class _RegisteringLoader:
    """Runs gymnasium's own loader, then registers navrl's ids in the module it made."""

    def __init__(self, finder: "GymnasiumFinder", loader):
        self.finder, self.loader = finder, loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        # the module keeps gymnasium's loader (resources, source, reload), not this wrapper
        module.__loader__ = self.loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)   # an error here is gymnasium's: it propagates, the finder stays
        self.finder.uninstall()
        _register_or_warn(module)

    def __getattr__(self, name):
        return getattr(self.loader, name)


class GymnasiumFinder:
    """A ``sys.meta_path`` finder that answers for ``gymnasium`` only: it asks the other finders
    for gymnasium's spec and wraps its loader so that navrl's ids are registered right after
    gymnasium's ``__init__`` has run."""

    navrl_gymnasium_hook = True   # how install() recognises an instance, even of a reloaded module

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "gymnasium":
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None   # not installed: the import fails as it would without navrl
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _RegisteringLoader(self, spec.loader)
        return spec

    def uninstall(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass


def install() -> None:
    """Arrange for navrl's ids to be registered when gymnasium is imported (at once if it is
    already). Idempotent; never raises. Run by ``_navrl_gymnasium.pth`` at start-up."""
    try:
        gymnasium = sys.modules.get("gymnasium")
        if gymnasium is not None:
            _register_or_warn(gymnasium)
        elif not any(getattr(f, "navrl_gymnasium_hook", False) for f in sys.meta_path):
            sys.meta_path.insert(0, GymnasiumFinder())
    except Exception:  # a broken hook must not break Python's start-up
        pass
