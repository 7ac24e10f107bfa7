from django import template

from benchhub.lib.methods import page_anybody_may_open

register = template.Library()


@register.simple_tag(takes_context=True)
def sign_out_next(context: template.Context) -> str:
    """Where signing out returns the user: this page, query and all, when
    anybody may see it (static/results/sign-in.js keeps it in step with the
    address bar); "" otherwise, for the home page. A page showing something
    only its submitter may see (a pending run) says so with ``private_page``."""
    request = context.get("request")
    if request is None or context.get("private_page"):
        return ""
    return request.get_full_path() if page_anybody_may_open(request.path) else ""
