"""Headless Chromium for the console's browser tests (SyncConsoleBrowserTests), driven by Selenium.

The Swift test writes one JSON command a line on standard input; this answers each with one JSON
line on standard output: {"ok": true, ...} or {"ok": false, "error": "..."}. It holds no test
logic of its own: the scenarios, and what they expect, are in the Swift test.

The browser is Debian's chromium and chromium-driver, named explicitly (COURIER_CHROMIUM,
COURIER_CHROMEDRIVER; /usr/bin/chromium and /usr/bin/chromedriver by default): Selenium Manager
never runs and nothing is downloaded. Headless, --no-sandbox (the tests run as root), a profile of
its own in a temporary folder. Every wait has a limit (WAIT seconds, generous: the machine may be
loaded by other suites), and nothing is timed.

Commands (every one takes "op"):
  open {url, until?}              navigate; answers the page (see page_info); with until, first
                                  waits for the page to reach a URL that starts with it
  check {css}                     click a checkbox (no navigation); answers whether it is checked
  click {css} | {button}          click an element (a CSS selector, or a button by its text) and
                                  wait for the next document; answers the page. A click that sent
                                  nothing within 10 s is made again (twice at most)
  fill {css, value}               type into an input (cleared first)
  select {css, value}             choose an option of a <select> by its value
  inject_form {action, fields}    add a POST form to the current page (as a forged request would)
                                  and submit it; answers the page
  texts {css}                     the innerText of every match
  count {css}                     how many elements match
  attributes {css, name}          one attribute of every match
  table {css}                     rows of cells (th and td), as text
  eval {script}                   execute_script(script); its value
  eval_async {script}             execute_async_script(script) (it calls arguments[0] with its
                                  value), waiting at most WAIT seconds
  alert                           whether an alert is open (it is dismissed) and its text; every
                                  page answer also carries "alert": the text of one that was open
  screenshot {path}               save a PNG of the window
  resize {width, height}          set the window's size (CSS pixels), as a phone's
  quit
"""

import json
import os
import shutil
import sys
import tempfile
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT = float(os.environ.get("COURIER_BROWSER_WAIT", "60"))


def start():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("COURIER_CHROMIUM") or "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="courier-chromium-")
    for argument in [
        "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
        "--no-first-run", "--no-default-browser-check", "--disable-extensions",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--window-size=1280,900", "--user-data-dir=" + profile,
    ]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    # An unexpected alert must stay open for the "alert" command to see, not be dismissed by
    # the next command.
    options.set_capability("unhandledPromptBehavior", "ignore")
    service = Service(os.environ.get("COURIER_CHROMEDRIVER") or "/usr/bin/chromedriver")
    try:
        driver = webdriver.Chrome(service=service, options=options)
    except Exception:
        shutil.rmtree(profile, ignore_errors=True)
        raise
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    return driver, profile


class Console:
    def __init__(self, driver):
        self.driver = driver
        self.responses = []  # (url, status, headers) of documents, oldest first
        self.requests = 0  # documents requested so far

    def drain_log(self):
        """Moves the document requests and responses of the performance log into self.requests
        (a count) and self.responses."""
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            method, params = message.get("method"), message.get("params", {})
            if params.get("type") != "Document":
                continue
            if method == "Network.requestWillBeSent":
                self.requests += 1
            elif method == "Network.responseReceived":
                response = params["response"]
                headers = {name.lower(): value for name, value in response.get("headers", {}).items()}
                self.responses.append((response.get("url"), response.get("status"), headers))

    def settle(self):
        """Waits for two animation frames: input sent to a page with no frame drawn yet (right
        after a load, on a loaded machine) can be dropped without a trace."""
        self.driver.execute_async_script(
            "const done = arguments[0]; requestAnimationFrame(() => requestAnimationFrame(() => done(true)));")

    def take_alert(self):
        """The text of an open alert (dismissed), or None: a page that opens one reports it."""
        try:
            alert = self.driver.switch_to.alert
            text = alert.text
            alert.dismiss()
            return text
        except NoAlertPresentException:
            return None

    def page_info(self):
        alert = self.take_alert()
        self.drain_log()
        url, status, headers = self.responses[-1] if self.responses else (None, None, {})
        body = self.driver.execute_script("return document.body ? document.body.innerText : ''")
        return {
            "url": self.driver.current_url,
            "title": self.driver.title,
            "status": status,
            "responseURL": url,
            "headers": headers,
            "text": body,
            "alert": alert,
        }

    def navigated(self, action, again=None):
        """Runs action (which makes the browser load a new document) and waits for that document.
        With again: when nothing was sent 10 s after the action (a click the page never saw),
        runs again instead, at most twice. Nothing sent means nothing to send twice."""
        self.drain_log()
        old = self.driver.find_element(By.TAG_NAME, "html")
        sent_before = self.requests
        try:
            action()
        except WebDriverException:
            # Under load chromedriver can report a click as failed (the node "does not belong
            # to the document") when the click went through and its form replaced the page
            # first: a document that left, or a request sent, says it did. Only a click that
            # did nothing is an error (on_element then finds the button again and retries).
            self.drain_log()
            if not (self.stale(old) or self.requests > sent_before):
                raise
        started = last = time.monotonic()
        tries = 1
        while True:
            try:
                old.tag_name
            except WebDriverException as error:
                if not self.left(error):
                    raise
                if self.driver.execute_script("return document.readyState") == "complete":
                    return self.page_info()
            now = time.monotonic()
            if now - started > WAIT:
                raise TimeoutException("no new document within %s s (%d tries)" % (WAIT, tries))
            if again and tries < 3 and now - last > 10:
                self.drain_log()
                # The performance log can lag behind a loaded browser: a document that already
                # left, or a button that is gone, means the click was seen after all.
                if self.requests == sent_before and not self.stale(old):
                    sys.stderr.write("console_driver: nothing sent 10 s after a click; clicking again\n")
                    try:
                        again()
                        tries += 1
                    except (LookupError, WebDriverException):
                        pass
                last = now
            time.sleep(0.1)

    @staticmethod
    def left(error):
        """Whether error says that an element left the document (its page was replaced).
        Chromium says so as a stale element, or now and then as an inspector error: "Node with
        given id does not belong to the document" (a bare WebDriverException)."""
        return isinstance(error, StaleElementReferenceException) or "does not belong to the document" in str(error)

    @classmethod
    def stale(cls, element):
        """Whether element left the document (the page it was on was replaced)."""
        try:
            element.tag_name
            return False
        except WebDriverException as error:
            if cls.left(error):
                return True
            raise

    def on_element(self, command, use):
        """Finds the element of command and passes it to use; finds it again (three tries, a
        fraction of a second apart) when Chromium says the node it found left the document,
        which it did now and then under load in a page that no longer changed."""
        for attempt in range(3):
            try:
                return use(self.element(command))
            except WebDriverException as error:
                if not self.left(error) or attempt == 2:
                    raise
                time.sleep(0.3)

    def element(self, command):
        if "button" in command:
            text = command["button"]
            matches = [b for b in self.driver.find_elements(By.TAG_NAME, "button") if b.text.strip() == text]
            if not matches:
                raise LookupError("no button %r on %s" % (text, self.driver.current_url))
            return matches[0]
        return self.driver.find_element(By.CSS_SELECTOR, command["css"])

    def run(self, command):
        op = command["op"]
        driver = self.driver
        if op == "open":
            self.drain_log()
            driver.get(command["url"])
            until = command.get("until")
            if until:
                # The page moves on by itself (a form that submits itself): wait for where it lands.
                WebDriverWait(driver, WAIT, poll_frequency=0.1).until(
                    lambda d: d.current_url.startswith(until) and d.execute_script("return document.readyState") == "complete",
                    "not at %s within %s s" % (until, WAIT))
            return self.page_info()
        if op == "check":
            def check(target):
                # A click the page never saw leaves the box as it was: click again (twice at most).
                before = target.is_selected()
                for _ in range(3):
                    self.settle()
                    target.click()
                    if target.is_selected() != before:
                        break
                return {"value": target.is_selected()}
            return self.on_element(command, check)
        if op == "click":
            def click(target):
                self.settle()
                return self.navigated(target.click, again=lambda: self.element(command).click())
            return self.on_element(command, click)
        if op == "fill":
            def fill(field):
                field.clear()
                field.send_keys(command["value"])
                return {}
            return self.on_element(command, fill)
        if op == "select":
            # By the option's value as the form would send it: its value attribute, or its text
            # when it has none (Select.select_by_value only looks at the attribute).
            select = Select(driver.find_element(By.CSS_SELECTOR, command["css"]))
            for index, option in enumerate(select.options):
                if option.get_property("value") == command["value"]:
                    select.select_by_index(index)
                    return {}
            raise LookupError("no option %r in %s" % (command["value"], command["css"]))
        if op == "inject_form":
            script = """
                const form = document.createElement('form');
                form.method = 'post';
                form.action = arguments[0];
                for (const [name, value] of arguments[1]) {
                    const input = document.createElement('input');
                    input.type = 'hidden'; input.name = name; input.value = value;
                    form.appendChild(input);
                }
                document.body.appendChild(form);
                form.submit();
            """
            return self.navigated(lambda: driver.execute_script(script, command["action"], command.get("fields", [])))
        if op == "texts":
            return {"values": [e.text for e in driver.find_elements(By.CSS_SELECTOR, command["css"])]}
        if op == "count":
            return {"count": len(driver.find_elements(By.CSS_SELECTOR, command["css"]))}
        if op == "attributes":
            return {"values": [e.get_attribute(command["name"]) for e in driver.find_elements(By.CSS_SELECTOR, command["css"])]}
        if op == "table":
            rows = []
            for row in driver.find_elements(By.CSS_SELECTOR, command["css"] + " tr"):
                rows.append([cell.text for cell in row.find_elements(By.CSS_SELECTOR, "th, td")])
            return {"rows": rows}
        if op == "eval":
            return {"value": driver.execute_script(command["script"])}
        if op == "eval_async":
            return {"value": driver.execute_async_script(command["script"])}
        if op == "alert":
            text = self.take_alert()
            return {"open": text is not None, "text": text}
        if op == "resize":
            driver.set_window_size(int(command["width"]), int(command["height"]))
            return {"value": driver.execute_script("return window.innerWidth")}
        if op == "screenshot":
            path = command["path"]
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if not driver.save_screenshot(path):
                raise OSError("could not save " + path)
            return {"path": path}
        raise ValueError("unknown op %r" % op)


def answer(reply):
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


def main():
    try:
        driver, profile = start()
    except Exception as error:  # the browser did not start: say why, once
        answer({"ok": False, "error": "cannot start chromium: %s" % error})
        return 1
    console = Console(driver)
    answer({"ok": True, "ready": True, "browser": driver.capabilities.get("browserVersion")})
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            command = json.loads(line)
            if command["op"] == "quit":
                answer({"ok": True})
                break
            try:
                reply = console.run(command)
                reply["ok"] = True
            except TimeoutException as error:
                reply = {"ok": False, "error": "timed out: %s" % error.msg}
            except Exception as error:
                reply = {"ok": False, "error": "%s: %s" % (type(error).__name__, error), "trace": traceback.format_exc(limit=3)}
            answer(reply)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
