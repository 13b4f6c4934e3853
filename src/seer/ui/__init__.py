"""`seer ui`: a web page that shows a request denoise step by step, with and without Seer.

    page.py     the Gradio page: prompt (+ image), options, the two canvases, the profile
    widgets.py  an option's field made from its spec (`seer.spec`): label, help, range, default
    render.py   HTML of a canvas after a step, the numbers, the comparison (no Gradio)

The page is mounted on the OpenAI server's FastAPI app (`seer ui`, or `seer serve --ui`) and
runs its requests on the server's engine thread; the engine's per-step view
(`Request.on_step`) feeds it. With an API key the page asks for it (Gradio's login: any user
name, the key as the password) before it shows or runs anything, and every route of Gradio's
API (`/ui/gradio_api/...`: its heartbeat, queue, uploads, cancel and reset included) answers
401 without the login's cookie (`_LoginOnly`), save the few the login page itself reads. Needs
the `ui` extra: `pip install "seer[ui]"`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seer.errors import SeerError

if TYPE_CHECKING:
    from seer.lm import DiffusionLM

PATH = "/ui"  # where the page is mounted


def mount(app, lm: DiffusionLM, path: str = PATH, api_key: str | None = None):
    """Mount the page for `lm` on `app` (the server's FastAPI app, `seer.serve.build`) at
    `path`; `/` redirects to it. `api_key`: the page's password (module docstring)."""
    try:
        import gradio as gr
    except ImportError as e:
        raise SeerError(
            f"the page needs the ui extra ({e.name} is missing): pip install 'seer[ui]'"
        ) from None
    from fastapi.responses import RedirectResponse

    from seer.ui import page, render

    blocks = page.build(lm, app.state.service)

    @app.get("/", include_in_schema=False)
    async def root():
        return RedirectResponse(f"{path}/")

    login = {}
    if api_key is not None:
        import secrets

        key = api_key.encode("utf-8")

        def allowed(_user, password) -> bool:
            return secrets.compare_digest(str(password).encode("utf-8"), key)

        hint = "Enter the server's API key as the password (any user name)."
        login = {"auth": allowed, "auth_message": hint}
    app = gr.mount_gradio_app(
        app,
        blocks,
        path=path,
        css=render.CSS,
        theme=page.theme(),
        footer_links=[],
        run_history=False,
        show_error=True,
        **login,
    )
    if api_key is not None:
        from starlette.routing import Mount

        for route in app.routes:
            if isinstance(route, Mount) and route.path == path:
                route.app = _LoginOnly(route.app)
    return app


class _LoginOnly:
    """ASGI guard in front of a Gradio app with a login: a request under its API prefix needs
    the login's cookie, except the routes the login page reads before there is one."""

    OPEN = (
        "/gradio_api/login_check",
        "/gradio_api/user",
        "/gradio_api/token",
        "/gradio_api/app_id",
        "/gradio_api/info",
        "/gradio_api/theme.css",
        "/gradio_api/startup-events",
    )

    def __init__(self, gradio) -> None:
        self.gradio = gradio  # gradio.routes.App: its cookie_id and tokens

    def logged_in(self, scope) -> bool:
        from starlette.requests import HTTPConnection

        cookies = HTTPConnection(scope).cookies
        cid = self.gradio.cookie_id
        token = cookies.get(f"access-token-{cid}") or cookies.get(f"access-token-unsecure-{cid}")
        return token is not None and token in self.gradio.tokens

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            rest = scope["path"].removeprefix(scope.get("root_path", ""))  # under the mount
            guarded = rest.startswith("/gradio_api/") and rest.rstrip("/") not in self.OPEN
            if guarded and not self.logged_in(scope):
                from starlette.responses import JSONResponse

                if scope["type"] == "websocket":
                    return await send({"type": "websocket.close", "code": 1008})
                response = JSONResponse({"detail": "Not authenticated"}, 401)
                return await response(scope, receive, send)
        return await self.gradio(scope, receive, send)


__all__ = ["PATH", "mount"]
