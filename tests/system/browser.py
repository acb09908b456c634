# SPDX-License-Identifier: LGPL-2.1-or-later
"""A headless Debian chromium driven over the Chrome DevTools Protocol (CDP), for the Cockpit
scenario of the system layer. Only python3-websocket is needed: no chromedriver, no Selenium.

Browser(workdir) starts "chromium --headless=new --remote-debugging-port=0" with a profile of its
own in a temporary directory (so every Browser is a fresh login), reads the DevTools address from
its stderr and attaches to its one page. It runs as root on the host, hence --no-sandbox; it only
ever connects to the URLs it is given (the tests give it http://127.0.0.1:PORT of the container's
cockpit-ws). close() ends the process it started, and only that one.
"""

import base64
import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.request

import websocket

from container import log, wait_until


class BrowserError(AssertionError):
    pass


def find_chromium():
    for name in ('chromium', 'chromium-browser'):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    def __init__(self, workdir, width=1280, height=900, name='browser'):
        self.name = name
        self.profile = tempfile.mkdtemp(prefix='thpd-chromium-', dir=workdir)
        self.log_path = os.path.join(workdir, f'{name}.chromium.log')
        self._log = open(self.log_path, 'w+')
        command = [find_chromium(), '--headless=new', '--no-sandbox', '--disable-gpu',
                   '--disable-dev-shm-usage', '--no-first-run', '--no-default-browser-check',
                   '--disable-background-networking', '--disable-sync', '--disable-extensions',
                   '--disable-features=Translate,MediaRouter,OptimizationHints',
                   '--password-store=basic', '--use-mock-keychain', '--hide-scrollbars',
                   '--remote-debugging-address=127.0.0.1', '--remote-debugging-port=0',
                   '--remote-allow-origins=http://127.0.0.1',
                   f'--user-data-dir={self.profile}', f'--window-size={width},{height}', 'about:blank']
        self.proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.ws = None
        self._id = 0
        self.events = []
        try:
            port = wait_until(self._devtools_port, 60, lambda: f'chromium\'s DevTools port (see {self.log_path})')
            targets = json.load(urllib.request.urlopen(f'http://127.0.0.1:{port}/json/list', timeout=30))
            page = next(t for t in targets if t['type'] == 'page')
            self.ws = websocket.create_connection(page['webSocketDebuggerUrl'], timeout=60,
                                                  origin='http://127.0.0.1')
            self.send('Page.enable')
            self.send('Runtime.enable')
        except BaseException:
            self.close()
            raise

    def _devtools_port(self):
        if self.proc.poll() is not None:
            raise BrowserError(f'chromium exited with {self.proc.returncode}:\n' + self._read_log()[-3000:])
        match = re.search(r'DevTools listening on ws://127\.0\.0\.1:(\d+)/', self._read_log())
        return int(match.group(1)) if match else None

    def _read_log(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    # -- the protocol

    def send(self, method, **params):
        self._id += 1
        ident = self._id
        self.ws.send(json.dumps({'id': ident, 'method': method, 'params': params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get('id') == ident:
                if 'error' in message:
                    raise BrowserError(f'{method}: {message["error"]}')
                return message.get('result', {})
            if 'method' in message:
                self.events.append(message)
                if message['method'] == 'Runtime.consoleAPICalled' and message['params'].get('type') in ('error', 'warning'):
                    args = ' '.join(str(a.get('value', a.get('description', ''))) for a in message['params']['args'])
                    log(f'{self.name} console {message["params"]["type"]}: {args}')
                elif message['method'] == 'Runtime.exceptionThrown':
                    log(f'{self.name} exception: {message["params"]["exceptionDetails"]}')

    def evaluate(self, expression):
        """The value of a JavaScript expression in the top page (awaited if it is a promise)."""
        result = self.send('Runtime.evaluate', expression=expression, returnByValue=True, awaitPromise=True)
        if 'exceptionDetails' in result:
            details = result['exceptionDetails']
            text = details.get('exception', {}).get('description') or details.get('text')
            raise BrowserError(f'{expression[:200]}: {text}')
        return result['result'].get('value')

    def wait(self, expression, timeout, message=None):
        """Evaluates expression until it is truthy; returns that value."""
        def check():
            with contextlib.suppress(BrowserError):
                return self.evaluate(expression)
            return None
        return wait_until(check, timeout, message or f'the page: {expression}', interval=0.25)

    def navigate(self, url, timeout=60):
        self.send('Page.navigate', url=url)
        time.sleep(0.1)  # let the old document start unloading before readyState is asked
        self.wait('document.readyState === "complete" && location.href !== "about:blank"', timeout,
                  f'{url} to load')

    def key(self, key, code, keycode, text=None):
        """One key press to the focused element (through every frame), as a user types it."""
        params = {'key': key, 'code': code, 'windowsVirtualKeyCode': keycode, 'nativeVirtualKeyCode': keycode}
        self.send('Input.dispatchKeyEvent', type='keyDown', **params, **({'text': text} if text else {}))
        self.send('Input.dispatchKeyEvent', type='keyUp', **params)

    def emulate(self, width=None, height=None, dark=None):
        if width:
            self.send('Emulation.setDeviceMetricsOverride', width=width, height=height or 900,
                      deviceScaleFactor=1, mobile=False)
        else:
            self.send('Emulation.clearDeviceMetricsOverride')
        if dark is not None:
            self.send('Emulation.setEmulatedMedia',
                      features=[{'name': 'prefers-color-scheme', 'value': 'dark' if dark else 'light'}])

    def screenshot(self, path):
        data = self.send('Page.captureScreenshot', format='png')['data']
        with open(path, 'wb') as f:
            f.write(base64.b64decode(data))

    def close(self):
        if self.ws is not None:
            with contextlib.suppress(Exception):
                self.ws.close()
            self.ws = None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self._log.close()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
