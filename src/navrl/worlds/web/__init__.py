"""The web world: MiniWoB++ pages and users' web apps in Chromium (the browser device).

``tasks`` (WebTaskSpec, the MiniWoB++ suite, scripted solutions, web-app suite files),
``judges`` (the page judge: the page's own reward or success check), ``source`` (MiniWoB++
draws for RL). Importing this package registers the ``miniwob`` suite, the
``web:PATH.yaml`` family and the ``page`` and ``page-fields`` judges.
"""
from navrl.tasks.registry import World, register_judges, register_suite, register_suite_family, register_world
from navrl.worlds.web.suite import MiniWoBSuite, WebAppSuite, page_fields_judges, page_judges

register_world(World("web", "MiniWoB++ and web apps in Chromium (the page judge)", hooks={
    "vocabulary": "navrl.worlds.web.vocabulary:web_vocabulary",
}))
register_suite(MiniWoBSuite())
register_suite_family("web", WebAppSuite, "web:PATH.yaml")
register_judges("page", page_judges)
register_judges("page-fields", page_fields_judges)
