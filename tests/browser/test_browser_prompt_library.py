"""The prompt library in a real browser: files shaped as people bring them (a story file and an
instruction-following file, each with its own column names) are uploaded and mapped, and the Run
page's plan says what the judge will read in the task's own words and which human-score column
it is checked against by default (the aspect's synonym column). One server, one browser; it stops
at the plan (the judge's prompts themselves are checked in tests/runs/test_prompt_library.py).
"""

from __future__ import annotations

import pytest

from tests.browser.test_browser import (CHROMIUM, CHROMIUM_ARGS, nav, playwright_api, server,  # noqa: F401
                                settle, visible)

pytestmark = pytest.mark.browser

STORIES = (b"prompt_id,story_prompt,model,story,engagement\n"
           b"p1,A dragon who fears fire.,m1,The dragon hid from the sun and lived.,2\n"
           b"p1,A dragon who fears fire.,m2,Embers scared Ash until the day she sneezed.,4\n"
           b"p1,A dragon who fears fire.,m3,Dragon. Fire. Sad.,1\n"
           b"p2,The last lighthouse keeper.,m1,Mara lit the lamp for ships that never came.,5\n"
           b"p2,The last lighthouse keeper.,m2,The light was on.,1\n"
           b"p2,The last lighthouse keeper.,m3,He kept the lamp and the lamp kept him.,3\n")
# Its id column has a name no rule knows ("item"): it is mapped as the context id by hand.
INSTRUCTIONS = (b"item,instruction,response,model,quality\n"
                b"q1,Name three primary colours.,\"Red, yellow and blue.\",m1,5\n"
                b"q1,Name three primary colours.,Green.,m2,1\n"
                b"q1,Name three primary colours.,\"Red, blue and yellow, the painter's set.\",m3,4\n"
                b"q2,Give a synonym of happy.,Joyful.,m1,5\n"
                b"q2,Give a synonym of happy.,Sad.,m2,1\n"
                b"q2,Give a synonym of happy.,\"Glad, or cheerful.\",m3,4\n")


def _upload(page, url: str, name: str, data: bytes, expect_task: str | None,
            map_context_id: str | None = None) -> None:
    page.goto(f"{url}/upload")
    settle(page, "Upload candidates")
    page.locator('[data-testid="stFileUploader"] input[type=file]').set_input_files(
        files=[{"name": name, "mimeType": "text/csv", "buffer": data}])
    settle(page, "Column mapping")
    if map_context_id is not None:  # the mapping step: nothing is named like an id
        page.locator('[data-testid="stSelectbox"]').filter(has_text="context_id").first.click()
        page.get_by_role("option", name=map_context_id, exact=True).click()
    settle(page, "No problem found")
    if expect_task is not None:
        visible(page.get_by_text(f"say these are {expect_task} texts").first)
    page.get_by_role("button", name="Save to the store").click()
    settle(page, "Saved as dataset")


def _plan(page, dataset: str) -> str:
    nav(page, "Run")
    settle(page, "Run the judge")
    picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="Dataset").first
    if dataset not in picker.inner_text():
        picker.click()
        page.get_by_role("option").filter(has_text=dataset).first.click()
    settle(page, "The judge will read")
    caption = page.get_by_text("The judge will read").first
    visible(caption)
    return caption.inner_text()


def test_story_and_instruction_files_are_worded_as_their_task(server, chromium):
    url, _ = server
    browser = chromium   # the module's Chromium (tests/browser/conftest.py)
    page = browser.new_page(viewport={"width": 1400, "height": 1500})

    _upload(page, url, "stories.csv", STORIES, "story")
    plan = _plan(page, "stories")
    # engagingness would have meant 'conversation / Response A': the columns say stories
    assert "Story prompt, then Story A and Story B (task story" in plan, plan
    assert "story_prompt, story" in plan, plan
    assert "the reference column engagement" in plan, plan  # engagingness's synonym
    page.get_by_text("Live preview").first.click()
    visible(page.get_by_text("Which Story is more engaging relative to the prompt").first)

    _upload(page, url, "instructions.csv", INSTRUCTIONS, "instruction", map_context_id="item")
    plan = _plan(page, "instructions")
    assert "Instruction, then Response A and Response B (task instruction" in plan, plan
    assert "the reference column quality" in plan, plan  # overall's synonym
