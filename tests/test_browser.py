"""The browser game and a replay page in a real browser: headless Chromium through selenium.

Skipped where no Chromium and chromedriver are installed (CI installs Debian's
``chromium`` and ``chromium-driver``). With ``GENERALA_SCREENSHOTS=DIR`` the screenshots
are also kept in ``DIR`` (how docs/play.png and docs/replay.png were made).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

webdriver = pytest.importorskip("selenium.webdriver")
pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="no Chromium and chromedriver installed (apt-get install chromium chromium-driver)")


def keep_screenshot(browser, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    assert browser.save_screenshot(str(path))
    assert path.stat().st_size > 10_000
    if os.environ.get("GENERALA_SCREENSHOTS"):
        folder = Path(os.environ["GENERALA_SCREENSHOTS"])
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / name)
    return path


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,900"):
        opts.add_argument(arg)
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console, for get_log("browser")
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def server():
    from generala_play.serve import make_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(make_app(), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


def shown(browser) -> int:
    return int(browser.find_element(By.TAG_NAME, "body").get_attribute("data-shown") or 0)


def click_and_wait(browser, element, attr="data-shown"):
    body = browser.find_element(By.TAG_NAME, "body")
    before = int(body.get_attribute(attr) or 0)
    element.click()
    WebDriverWait(browser, 20).until(lambda b: int(body.get_attribute(attr) or 0) > before)


def open_page(browser, server) -> None:
    """The page, once it has listed the agents and set up its first two seats."""
    browser.get(server + "/")
    WebDriverWait(browser, 20).until(lambda b: int(b.find_element(By.TAG_NAME, "body").get_attribute("data-agents") or 0) >= 1)


def set_seats(browser, seats: list[tuple[str, str]]) -> None:
    """Seat the table: ``("person", name)`` or ``("agent", agent name)`` per seat, in order."""
    while len(browser.find_elements(By.CSS_SELECTOR, "#seats li")) < len(seats):
        click_and_wait(browser, browser.find_element(By.ID, "add-seat"), "data-agents")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#seats li")) == len(seats)
    for i, (kind, name) in enumerate(seats):
        Select(browser.find_element(By.ID, f"seat-kind-{i}")).select_by_value("person" if kind == "person" else name)
        if kind == "person":
            box = browser.find_element(By.ID, f"seat-name-{i}")
            box.clear()
            box.send_keys(name)


def test_a_whole_game_through_the_page(browser, server, tmp_path):
    open_page(browser, server)
    set_seats(browser, [("person", "you"), ("agent", "greedy")])
    click_and_wait(browser, browser.find_element(By.ID, "new-game"))
    assert "you's move" in browser.find_element(By.ID, "status").text
    click_and_wait(browser, browser.find_element(By.ID, "hint"), "data-hints")
    assert "expected final total" in browser.find_element(By.ID, "hint-text").text
    turns = 0
    while "Game over" not in browser.find_element(By.ID, "status").text:
        reroll = browser.find_element(By.ID, "reroll")
        if reroll.is_enabled() and turns % 2 == 0 and browser.find_element(By.ID, "rolls-left").text == "2":
            die = browser.find_element(By.ID, "die-4")
            die.click()  # keep the highest die, reroll the rest
            assert "keep" in die.get_attribute("class")
            click_and_wait(browser, reroll)
            assert browser.find_element(By.ID, "rolls-left").text == "1"
            if turns == 4:  # a picture of a game under way: dice kept, a hint, the sheets
                click_and_wait(browser, browser.find_element(By.ID, "hint"), "data-hints")
                keep_screenshot(browser, tmp_path, "play.png")
        writes = browser.find_elements(By.CSS_SELECTOR, "button.write")
        assert writes, "no line to write on during my move"
        click_and_wait(browser, writes[0])
        turns += 1
        assert turns <= 10
    state = browser.execute_script("return game")  # the page's last state from the server
    assert state["over"] and not browser.find_element(By.ID, "error").text
    assert turns == 10 or state["served_generala_win"], (turns, state["log"])  # a served generala ends a game early
    log = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#log li")]
    assert sum(m.startswith("you: wrote") or m.startswith("you: crossed") for m in log) >= 1
    assert any(m.startswith("greedy: ") for m in log)
    totals = [int(browser.find_element(By.ID, f"total-{s}").text) for s in (0, 1)]
    cells = browser.find_elements(By.CSS_SELECTOR, "#sheet td")
    assert totals[0] + totals[1] > 0 and len(cells) == 10 * 3
    keep_screenshot(browser, tmp_path, "play-end.png")


def test_a_bad_move_shows_the_error_and_the_game_goes_on(browser, server):
    open_page(browser, server)
    click_and_wait(browser, browser.find_element(By.ID, "new-game"))
    for i in range(5):  # keep all five: not a reroll
        browser.find_element(By.ID, f"die-{i}").click()
    click_and_wait(browser, browser.find_element(By.ID, "reroll"), "data-errors")
    assert "holding all five dice" in browser.find_element(By.ID, "error").text
    click_and_wait(browser, browser.find_elements(By.CSS_SELECTOR, "button.write")[0])
    assert not browser.find_element(By.ID, "error").text


def test_a_replay_shows_every_move(browser, tmp_path):
    from generala_play.replay import page, record, write_page

    replays, notes = record(["greedy"], "classic", games=1, seed=3)
    path = tmp_path / "replay.html"
    write_page(path, page(replays, notes))
    browser.get(path.as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "tr[id^='g1m']")
    moves = replays[0].moves
    assert len(rows) == len(moves)
    for row, m in zip(rows, moves, strict=True):
        cells = row.find_elements(By.TAG_NAME, "td")
        assert cells[5].text == m.text and cells[-1].text == f"{m.regret:.2f}"
    keep_screenshot(browser, tmp_path, "replay.png")
    worst = max(range(len(moves)), key=lambda i: moves[i].regret)
    link = browser.find_element(By.CSS_SELECTOR, f"a[href='#g1m{worst + 1}']")
    link.click()
    assert browser.current_url.endswith(f"#g1m{worst + 1}")
    held = browser.find_elements(By.CSS_SELECTOR, "span.die.held")
    assert len(held) == sum(sum(m.held) for m in moves)


def test_before_a_game_the_panels_are_hidden_and_hint_and_reroll_do_nothing(browser, server):
    open_page(browser, server)
    browser.get_log("browser")  # what loading the page logged: not this test's
    for panel in ("table-panel", "log-panel"):
        assert not browser.find_element(By.ID, panel).is_displayed()
    for button in ("hint", "reroll"):
        element = browser.find_element(By.ID, button)
        assert not element.is_enabled()
        browser.execute_script("arguments[0].disabled = false; arguments[0].click();", element)  # a click the page did not expect
    # the handlers are async: let their promises settle (an error thrown in one reaches the console)
    browser.execute_async_script("const done = arguments[arguments.length - 1]; setTimeout(() => setTimeout(done, 50), 50);")
    errors = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    assert browser.execute_script("return game") is None
    assert not browser.find_element(By.ID, "error").text
    click_and_wait(browser, browser.find_element(By.ID, "new-game"))
    assert browser.find_element(By.ID, "table-panel").is_displayed() and browser.find_element(By.ID, "hint").is_enabled()


def test_a_table_of_four_with_two_people_at_one_browser(browser, server, tmp_path):
    """Ana and Bo take turns at the page, greedy and optimal play between them; the hint, the
    sheets, the log and at the end the replay are checked, with pictures of the table."""
    open_page(browser, server)
    browser.get_log("browser")  # what loading the page logged: not this test's
    set_seats(browser, [("person", "Ana"), ("agent", "greedy"), ("person", "Bo"), ("agent", "optimal")])
    browser.set_window_size(1400, 1500)  # the whole table in the pictures
    click_and_wait(browser, browser.find_element(By.ID, "new-game"))
    heads = [browser.find_element(By.ID, f"player-{s}").text for s in range(4)]
    assert heads == ["Ana", "greedy \u2699", "Bo", "optimal \u2699"]
    movers, writes = [], 0
    while "Game over" not in browser.find_element(By.ID, "status").text:
        status = browser.find_element(By.ID, "status").text
        who = status.split("'s move")[0]
        assert who in ("Ana", "Bo"), status
        movers.append(who)
        mover = browser.find_element(By.CSS_SELECTOR, "th.mover").text
        assert mover == who  # the mover's column is marked
        if writes < 4 and browser.find_element(By.ID, "rolls-left").text == "2":
            click_and_wait(browser, browser.find_element(By.ID, "hint"), "data-hints")
            hint = browser.find_element(By.ID, "hint-text").text
            assert hint.startswith(f"{who}: the optimal player would") and "no exact solver covers 4 players" in hint
            assert len(browser.find_elements(By.CSS_SELECTOR, "#hint-text tr")) >= 3  # a heading and the best moves
            browser.find_element(By.ID, "die-4").click()
            click_and_wait(browser, browser.find_element(By.ID, "reroll"))
            if writes == 2:  # Ana's second turn, a reroll made, a hint shown
                click_and_wait(browser, browser.find_element(By.ID, "hint"), "data-hints")
                keep_screenshot(browser, tmp_path, "play-table-4-seats.png")
        click_and_wait(browser, browser.find_elements(By.CSS_SELECTOR, "button.write")[0])
        writes += 1
        assert writes <= 20
    assert movers[0] == "Ana" and "Bo" in movers and set(movers) == {"Ana", "Bo"}
    state = browser.execute_script("return game")
    assert state["over"] and not browser.find_element(By.ID, "error").text
    log = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#log li")]
    for name in ("Ana", "Bo", "greedy", "optimal"):
        assert any(m.startswith(f"{name}: wrote") or m.startswith(f"{name}: crossed") for m in log), name
    assert any(m.startswith("optimal: held") and "\u2192" in m for m in log)  # an agent's reroll, with the dice it gave
    assert len(browser.find_elements(By.CSS_SELECTOR, "#sheet tr")) == 10 + 2 and len(browser.find_elements(By.CSS_SELECTOR, "#sheet td")) == 10 * 5
    totals = [int(browser.find_element(By.ID, f"total-{s}").text) for s in range(4)]
    assert totals == state["totals"] and sum(totals) > 0
    errors = [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []
    keep_screenshot(browser, tmp_path, "play-table-4-seats-end.png")
    link = browser.find_element(By.ID, "replay")
    assert link.is_displayed() and link.get_attribute("href") == f"{server}/api/games/{state['id']}/replay"
    browser.set_window_size(1300, 900)
    browser.get(link.get_attribute("href"))
    rows = browser.find_elements(By.CSS_SELECTOR, "tr[id^='g1m']")
    assert len(rows) == len(log) and "P0 Ana vs P1 greedy vs P2 Bo vs P3 optimal" in browser.find_element(By.TAG_NAME, "h2").text
