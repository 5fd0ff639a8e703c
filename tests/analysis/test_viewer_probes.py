"""The trajectory viewer's probes side by side, in real headless Chromium from file://: the
"hit in A, miss in B" and reach filters, permalinks that restore a probe and its filters, hostile
text shown as text, images as lazily loaded files, keyboard navigation with scroll reset."""

from __future__ import annotations

import io
import json

from urllib.parse import parse_qs

import polars as pl
import pytest

from tests.analysis.test_viewer import HOSTILE, _browser

ARCHS = ["dualmem", "textonly", "m2a-lite"]
#: probe -> (target product, visit session, recall session, reach, outcome per architecture)
PROBES = {"p0": ("t0", 1, 2, 1, (True, False, True)), "p1</script><!--<script &amp;": ("t1", 1, 2, 1, (False, True, False)),
          "p2": ("t2", 2, 3, 1, (True, True, False)), "p3": ("t0", 1, 3, 2, (False, False, True))}
HOSTILE_CUE = HOSTILE[0] + " " + HOSTILE[1]


def _png(i: int) -> bytes:
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (200, 200), (40 + i * 5 % 200, 90, 160))
    ImageDraw.Draw(im).rectangle((10 + i % 50, 20, 150, 180), fill=(250, 250 - i * 3 % 200, 0))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


def _steps() -> tuple[pl.DataFrame, dict[str, bytes], dict[str, str]]:
    rows, images, products = [], {}, {}
    urls = {1: ["/", "/product/t0", "/product/t1"], 2: ["/product/t2", "/product/t3", "/"],
            3: [f"/product/long{i:02d}" for i in range(40)]}
    for j, us in urls.items():
        for n, u in enumerate(us, 1):
            h = u.rsplit("/", 1)[-1] if u.startswith("/product/") else None
            key = f"blobs/sha256/{j}-{n}" if h else None
            if h:
                images[key] = _png(len(images))
                products.setdefault(h, key)
            rows.append({"backend": "chain A", "seed": 0, "j": j, "step": n, "url": u, "url_hash": h, "image_key": key,
                         "thought": f"thought {j}.{n}", "status": "ok"})
    return pl.DataFrame(rows), images, products


def _probe_rows() -> pl.DataFrame:
    rows = []
    for a_i, arch in enumerate(ARCHS):
        for pid, (t, visit, recall, reach, oks) in PROBES.items():
            ok = oks[a_i]
            hostile = pid.startswith("p1")
            log = [{"url": "/", "status": "ok", "action_type": "navigate", "action_arg": f"/product/{t}",
                    "reply": HOSTILE[4] if hostile else "Thought: go", "recalled": [t, "t3"], "n_images": 2,
                    "memory_text": HOSTILE_CUE if hostile else f"MEMORY {arch} {pid}"}]
            rows.append({"backend": "rec A", "chain_slug": "slug", "chain_backend": "chain A", "seed": 0, "J": 3,
                         "architecture": arch, "probe_id": pid, "visit_session": visit, "recall_session": recall,
                         "reach": reach, "target_url": f"/product/{t}", "final_url": f"/product/{t if ok else 't3'}",
                         "correct": ok, "steps": 1, "target_cue": HOSTILE_CUE if hostile else f"cue {pid}",
                         "failure": None if ok else "wrong_product", "log": json.dumps(log), "target_image": None})
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    from vismem.analysis.probe_page import pair_counts
    from vismem.analysis.viewer import trajectory_viewer

    out = tmp_path_factory.mktemp("viewer")
    steps, images, products = _steps()
    assets: dict[str, bytes] = {}
    banks = {("dualmem", "slug", 0, "t1"): {"session": 1, "position": 2, "text": "Memory: " + HOSTILE[3], "image": True}}
    rows = _probe_rows()
    html = trajectory_viewer(steps, rows, images, product_images=products, run_id="side", assets=assets,
                             banks=banks, pairs=pair_counts(rows))
    for rel, data in assets.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    (out / "trajectories.html").write_text(html)
    return out / "trajectories.html"


@pytest.fixture(scope="module")
def browser(chromium_path):
    pw, b = _browser(chromium_path)
    yield b
    b.close()
    pw.stop()


def _open(browser, url):
    page = browser.new_page()
    errs: list[str] = []
    page.on("pageerror", lambda e: errs.append(str(e)))
    page.goto(url, wait_until="load")
    page.wait_for_selector("body[data-ready]")
    return page, errs


def _probe_ids(page) -> list[str]:
    return [k.split("|")[2] for k in page.locator(".probe-item").evaluate_all("es => es.map(e => e.dataset.key)")]


def test_hit_in_a_miss_in_b_and_reach_filters(browser, viewer):
    page, errs = _open(browser, viewer.as_uri() + "#tab=probes")
    assert page.locator(".probe-item").count() == 4
    assert page.locator(".probe-item").first.locator(".sq").count() == 3  # one square per architecture
    page.select_option("#f-a", "dualmem")
    page.select_option("#f-b", "textonly")
    page.select_option("#f-rel", "hit-miss")
    assert _probe_ids(page) == ["p0"]
    assert "whole run: 1 of 4 probes both answered" in page.locator("#count").text_content()
    assert "a=dualmem" in page.url and "b=textonly" in page.url and "rel=hit-miss" in page.url
    page.select_option("#f-rel", "miss-hit")
    assert _probe_ids(page) == ["p1</script><!--<script &amp;"]
    page.select_option("#f-rel", "hit-hit")
    assert _probe_ids(page) == ["p2"]
    page.select_option("#f-rel", "")
    page.select_option("#f-reach", "2")
    assert _probe_ids(page) == ["p3"]
    page.select_option("#f-reach", "")
    page.select_option("#f-architecture", "m2a-lite")
    page.select_option("#f-outcome", "success")
    assert sorted(_probe_ids(page)) == ["p0", "p3"] and "m2a-lite succeeded on 2" in page.locator("#count").text_content()
    assert errs == []


def test_a_permalink_restores_the_probe_and_its_filters(browser, viewer):
    page, _ = _open(browser, viewer.as_uri() + "#tab=probes&a=textonly&b=dualmem&rel=hit-miss")
    assert page.locator(".probe-item").count() == 1
    page.locator(".probe-item").first.click()
    page.wait_for_selector("#detail table.side")
    link = page.url
    assert "probe=" in link and "rel=hit-miss" in link
    again, errs = _open(browser, link)
    again.wait_for_selector("#detail table.side")
    assert again.locator("#f-rel").input_value() == "hit-miss" and again.locator("#f-a").input_value() == "textonly"
    rows = again.locator("#detail table.side tr[data-arch]")
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.arch + ':' + r.className)") == [
        "dualmem:miss", "textonly:hit", "m2a-lite:miss"]
    assert "/product/t3" in rows.nth(0).locator("td.opened").text_content()  # the product each one opened
    assert again.locator("#detail .item.sel, .item.sel").count() == 1
    assert again.locator("#detail a.permalink").get_attribute("href") == "#" + link.split("#", 1)[1]
    assert errs == []


def test_hostile_probe_text_is_shown_as_text(browser, viewer):
    page, errs = _open(browser, viewer.as_uri() + "#tab=probes")
    page.locator(".probe-item", has_text=HOSTILE[0]).click()
    page.wait_for_selector("#detail .arch-log[open] pre.memory")
    assert page.locator("#probe-detail b").first.text_content() == HOSTILE_CUE
    assert page.locator("#detail .arch-log[open] pre.memory").text_content() == HOSTILE_CUE
    assert page.locator("#detail .arch-log[open] pre.reply").text_content() == HOSTILE[4]
    wrote = page.locator("#detail table.side td.wrote")  # what each wrote about the target, as text
    assert page.locator("#detail .entry-text").text_content() == "Memory: " + HOSTILE[3]
    assert "session 1, entry 3" in wrote.nth(0).text_content() and wrote.nth(1).text_content() == "(not in its bank)"
    for block in ("vdata", "vprobes", "vimg"):
        raw = page.locator(f"#{block}").evaluate("e => e.textContent")
        assert not set(raw) & set("<>&")
    # The probe's permalink carries its hostile id and opens it again.
    again, errs2 = _open(browser, page.url)
    again.wait_for_selector("#detail table.side")
    assert again.locator("#probe-detail b").first.text_content() == HOSTILE_CUE
    assert page.evaluate("window.pwned") is None and again.evaluate("window.pwned") is None and errs == errs2 == []


def test_images_are_lazy_files_and_keys_move_through_the_list(browser, viewer):
    page, errs = _open(browser, viewer.as_uri() + "#session=3")
    page.set_viewport_size({"width": 1200, "height": 700})
    imgs = page.locator("#detail .step img.obs")
    assert imgs.count() == 40 and imgs.first.get_attribute("loading") == "lazy"
    assert all((viewer.parent / imgs.nth(i).get_attribute("src")).is_file() for i in (0, 39))
    page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=imgs.first.element_handle())
    loaded = "() => performance.getEntriesByType('resource').filter(e => e.initiatorType === 'img').length"
    assert page.evaluate(loaded) < 40  # far below the fold: not fetched yet
    imgs.last.scroll_into_view_if_needed()
    page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=imgs.last.element_handle())
    # j / k and the arrows: next / previous item; the detail pane starts at its top.
    page.goto(viewer.as_uri() + "#", wait_until="load")
    page.reload(wait_until="load")
    page.wait_for_selector("body[data-ready]")
    keys = page.locator(".session-item").evaluate_all("es => es.map(e => e.dataset.key)")
    sel = "() => document.querySelector('.item.sel').dataset.key"
    assert page.evaluate(sel) == keys[0]
    page.locator("#detail").evaluate("d => { d.scrollTop = 400; }")
    page.keyboard.press("j")
    assert page.evaluate(sel) == keys[1] and page.locator("#detail").evaluate("d => d.scrollTop") == 0
    page.keyboard.press("ArrowDown")
    assert page.evaluate(sel) == keys[2] and "session 3" in page.locator("#detail h2").text_content()
    # The open session is in the hash: the link opens it again.
    again, errs2 = _open(browser, page.url)
    assert again.evaluate(sel) == keys[2] and "session 3" in again.locator("#detail h2").text_content() and errs2 == []
    page.keyboard.press("k")
    page.keyboard.press("ArrowUp")
    assert page.evaluate(sel) == keys[0]
    assert errs == []


def test_keys_go_on_past_the_listed_probes(browser, tmp_path):
    """The list shows 300 probes at a time; j on the last one lists the next ones and moves on
    (it stopped there), and the probe it opens is the next of the filtered order."""
    from vismem.bench.trajectory_viewer import build

    page_path, info = build(tmp_path, backends=1, chains=1, J=10, steps=3, architectures=1)
    assert info["probes"] > 300
    page, errs = _open(browser, page_path.as_uri() + "#tab=probes")
    items = page.locator(".probe-item")
    assert items.count() == 300
    items.nth(299).click()
    page.wait_for_selector("#detail table.side")
    order = page.evaluate("() => probesShown().map(g => g.k)")
    page.keyboard.press("j")
    page.wait_for_function("k => document.querySelector('.item.sel') && document.querySelector('.item.sel').dataset.key === k",
                           arg=order[300])
    assert items.count() == min(600, len(order)) and parse_qs(page.url.split("#", 1)[1])["probe"] == [order[300]]
    page.keyboard.press("k")
    assert page.evaluate("() => document.querySelector('.item.sel').dataset.key") == order[299]
    assert errs == []
