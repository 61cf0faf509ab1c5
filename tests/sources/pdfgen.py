"""Hand-written minimal PDFs (pypdf cannot lay out text), built with a correct xref table."""

from __future__ import annotations


def _escape(text: str) -> bytes:
    raw = text.encode("latin-1")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def make_pdf(
    pages: list[list[str]],
    *,
    title: str | None = None,
    links: dict[int, str] | None = None,
) -> bytes:
    """A PDF with one page per entry of ``pages``; each string is a line of Helvetica text.

    A page given as an empty list gets a drawing and no text. ``links`` maps a page index to a
    URI for a link annotation on that page.
    """
    links = links or {}
    objects: dict[int, bytes] = {}
    first_page = 4
    page_ids = [first_page + 2 * i for i in range(len(pages))]
    kids = b" ".join(b"%d 0 R" % pid for pid in page_ids)
    objects[1] = b"<< /Type /Catalog /Pages 2 0 R >>"
    objects[2] = b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % len(pages)
    objects[3] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    for index, (page_id, lines) in enumerate(zip(page_ids, pages, strict=True)):
        content_id = page_id + 1
        if lines:
            shown = b" T* ".join(b"(" + _escape(line) + b") Tj" for line in lines)
            stream = b"BT /F1 12 Tf 14 TL 72 720 Td " + shown + b" ET"
        else:
            stream = b"0.5 w 72 72 m 300 300 l S"
        annots = b""
        if index in links:
            annots = (
                b" /Annots [<< /Type /Annot /Subtype /Link /Rect [72 700 300 730] /Border [0 0 0]"
                b" /A << /S /URI /URI (" + _escape(links[index]) + b") >> >>]"
            )
        objects[page_id] = (
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792]"
            b" /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R" % content_id + annots + b" >>"
        )
        objects[content_id] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"
    info_id = None
    if title is not None:
        info_id = max(objects) + 1
        objects[info_id] = b"<< /Title (" + _escape(title) + b") /Producer (wikigr tests) >>"

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    size = max(objects) + 1
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets[number]
    trailer = b"<< /Size %d /Root 1 0 R" % size
    if info_id is not None:
        trailer += b" /Info %d 0 R" % info_id
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)
