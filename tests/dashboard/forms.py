"""The forms and links of a dashboard page, read as a browser reads them, so tests press its
buttons with exactly the fields the page gives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Form:
    action: str
    button: str
    fields: dict[str, str] = field(default_factory=dict)


class Forms(HTMLParser):
    """The forms of a page by the ``id`` of the table row they are in, and its links."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: dict[str, list[Form]] = {}
        self.links: list[str] = []
        self._row = ""
        self._form: Form | None = None
        self._in_button = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "tr":
            self._row = attributes.get("id", "")
        elif tag == "form":
            self._form = Form(attributes["action"], "")
            self.rows.setdefault(self._row, []).append(self._form)
        elif tag == "input" and self._form is not None:
            self._form.fields[attributes["name"]] = attributes.get("value", "")
        elif tag == "button":
            self._in_button = True
        elif tag == "a" and "href" in attributes:
            self.links.append(attributes["href"])

    def handle_data(self, data: str) -> None:
        if self._in_button and self._form is not None:
            self._form.button += data.strip()

    def handle_endtag(self, tag: str) -> None:
        if tag == "button":
            self._in_button = False
        elif tag == "form":
            self._form = None
