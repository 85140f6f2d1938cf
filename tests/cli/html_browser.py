#!/usr/bin/env python3
"""tests/cli/html_browser.py DIR — the HTML reports rendered in headless Chromium.

One browser for every page (the DevTools protocol over a pipe, Python's
standard library only). Each page is loaded at 1280 px, in the light and the
dark colour scheme and as printed, and checked:
  - nothing runs past the page width (document scrollWidth <= the viewport);
  - every chart is there with a real size, and every text of a chart lies
    inside its SVG (nothing clipped);
  - bars as rendered are as long as their values on one scale;
  - a screenshot of each chart's region is not blank (PNG decoded here) and
    the dark scheme really is dark with light text.
Writes the light screenshots as DIR/<page>.png. Prints "ok - name" /
"FAIL - name" / "skip - name (why)" lines; the calling script counts them."""
import base64
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import html_pages as P  # noqa: E402
from html_pages import check, fail, ok  # noqa: E402

WIDTH = 1280


# ---- PNG (8-bit RGB/RGBA, non-interlaced: what Chromium writes) ------------------------------------------------

def png_pixels(data):
    """(width, height, rows of (r, g, b) tuples)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("PNG kind %d/%d/%d" % (depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


# ---- the browser ---------------------------------------------------------------------------------------------

class Browser:
    def __init__(self, exe):
        self.profile = tempfile.mkdtemp(prefix="fp8plan-chromium-")
        r_cmd, w_cmd = os.pipe()
        r_res, w_res = os.pipe()

        def child():  # the DevTools pipe: commands on fd 3, replies on fd 4
            a, b = os.dup(r_cmd), os.dup(w_res)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [exe, "--headless", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
                "--no-default-browser-check", "--hide-scrollbars", "--user-data-dir=" + self.profile, "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root inside its sandbox
        self.proc = subprocess.Popen(args, close_fds=False, preexec_fn=child, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(r_cmd)
        os.close(w_res)
        self.w, self.r, self.buf, self.id = os.fdopen(w_cmd, "wb", 0), os.fdopen(r_res, "rb", 0), b"", 0
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def send(self, method, params=None, page=False):
        self.id += 1
        msg = {"id": self.id, "method": method, "params": params or {}}
        if page:
            msg["sessionId"] = self.session
        self.w.write(json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self.buf:
                chunk = self.r.read(1 << 20)
                if not chunk:
                    raise RuntimeError("the browser closed the pipe")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\0", 1)
            reply = json.loads(line)
            if reply.get("id") == self.id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply["result"]

    def js(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, True)
        if "exceptionDetails" in r:
            raise RuntimeError("script: %s" % r["exceptionDetails"])
        return r["result"].get("value")

    def load(self, path, scheme="light", media=""):
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False}, True)
        self.send("Emulation.setEmulatedMedia",
                  {"media": media, "features": [{"name": "prefers-color-scheme", "value": scheme}]}, True)
        self.send("Page.navigate", {"url": "file://" + os.path.abspath(path)}, True)
        for _ in range(500):
            if self.js("document.readyState") == "complete":
                return
            time.sleep(0.02)
        raise RuntimeError("%s did not load" % path)

    def shot(self, clip, scale=1.0):
        r = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                 "clip": dict(clip, scale=scale)}, True)
        return base64.b64decode(r["data"])

    def close(self):
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


# What the page says about itself, measured in the browser.
MEASURE = r"""(() => {
  const de = document.documentElement, out = {scrollWidth: de.scrollWidth, viewport: window.innerWidth, figs: {}};
  out.bodyBg = getComputedStyle(document.body).backgroundColor;
  for (const fig of document.querySelectorAll('figure.figure')) {
    const svg = fig.querySelector('svg.chart');
    if (!svg) continue;
    const b = svg.getBoundingClientRect(), clipped = [], ratios = [];
    for (const t of svg.querySelectorAll('text')) {  /* as laid out, rotations included */
      const r = t.getBoundingClientRect();
      if (r.width && (r.left < b.left - 1 || r.top < b.top - 1 || r.right > b.right + 1 || r.bottom > b.bottom + 1))
        clipped.push(t.textContent.slice(0, 40));
    }
    const g = svg.querySelector('g.bars'), scale = g ? parseFloat(g.dataset.scale) : 0;
    if (g) for (const r of svg.querySelectorAll('rect.bar')) {
      const v = parseFloat(r.dataset.v) * scale;
      if (v > 0) ratios.push([v, r.getBoundingClientRect().width]);
    }
    const txt = svg.querySelector('text');
    out.figs[svg.id] = {x: b.x + scrollX, y: b.y + scrollY, w: b.width, h: b.height, clipped, ratios,
                        text: txt ? getComputedStyle(txt).fill : ''};
  }
  return out;
})()"""


def luminance(css):
    """Relative luminance of an rgb()/rgba() colour."""
    nums = [float(x) for x in css[css.index("(") + 1:css.index(")")].split(",")[:3]]
    return sum(w * c / 255 for w, c in zip((0.2126, 0.7152, 0.0722), nums))


def region_drawn(png):
    """Share of pixels that differ from the most common colour, and the number of distinct colours."""
    w, h, rows = png_pixels(png)
    counts = {}
    for row in rows:
        for px in row:
            counts[px] = counts.get(px, 0) + 1
    bg = max(counts.values())
    return 1 - bg / (w * h), len(counts)


def page_checks(b, name, path, figs, outdir):
    for scheme, media in (("light", ""), ("dark", ""), ("light", "print")):
        mode = "print" if media else scheme
        b.load(path, scheme, media)
        m = b.js(MEASURE)
        check("%s (%s): no overflow past %d px (scrollWidth %d)" % (name, mode, WIDTH, m["scrollWidth"]),
              m["scrollWidth"] <= m["viewport"])
        missing = [f for f in figs if f not in m["figs"] or m["figs"][f]["w"] < 300 or m["figs"][f]["h"] < 60]
        check("%s (%s): every chart laid out (%d)" % (name, mode, len(figs)), not missing, missing)
        clipped = ["%s: %s" % (f, c) for f in figs if f in m["figs"] for c in m["figs"][f]["clipped"]]
        check("%s (%s): every chart text inside its chart" % (name, mode), not clipped, *clipped[:5])
        if mode == "dark":
            dark_bg = luminance(m["bodyBg"]) < 0.2
            light_text = all(luminance(m["figs"][f]["text"]) > 0.6 for f in figs if f in m["figs"])
            check("%s (dark): a dark page with light chart text" % name, dark_bg and (light_text or not figs),
                  m["bodyBg"], [m["figs"][f]["text"] for f in figs if f in m["figs"]])
        if mode == "print":
            check("%s (print): printed on white" % name, luminance(m["bodyBg"]) > 0.95, m["bodyBg"])
        if mode != "light":
            continue
        bad = []
        for f in figs:
            rat = m["figs"].get(f, {}).get("ratios", [])
            if rat:
                v0, w0 = max(rat)
                # rendered at the chart's size: half a pixel of anti-aliasing slack per end
                bad += ["%s: %.4g -> %.2f px, expected %.2f" % (f, v, w, v * w0 / v0)
                        for v, w in rat if abs(w - v * w0 / v0) > 1.0]
        check("%s: rendered bars as long as their values" % name, not bad, *bad[:5])
        for f in figs:
            if f not in m["figs"]:
                continue
            r = m["figs"][f]
            drawn, colours = region_drawn(b.shot({"x": r["x"], "y": r["y"], "width": r["w"], "height": r["h"]},
                                                 0.25))
            check("%s %s: the chart's pixels are drawn (%.1f %% not background, %d colours)" %
                  (name, f, 100 * drawn, colours), drawn > 0.02 and colours >= 4)
        height = b.js("document.documentElement.scrollHeight")
        png = b.shot({"x": 0, "y": 0, "width": WIDTH, "height": min(height, 16000)})
        open(os.path.join(outdir, name + ".png"), "wb").write(png)
        w, _, _ = struct.unpack(">I", png[16:20]) + (0, 0)
        check("%s: the screenshot is %d px wide" % (name, WIDTH), w == WIDTH, w)


def main():
    outdir = sys.argv[1]
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not exe:
        print("skip - browser rendering (no chromium: make test installs it as root, or: "
              "sudo apt-get install -y chromium)")
        return
    pages = P.generate(outdir)
    start = time.time()
    try:
        b = Browser(exe)
    except Exception as e:
        print("skip - browser rendering (%s did not start: %s)" % (exe, e))
        return
    try:
        for name, (path, rc, err) in pages.items():
            if rc != 0:
                fail("%s: written (exit %d)" % (name, rc), err)
                continue
            try:
                page_checks(b, name, path, P.PAGES[name][2], outdir)
            except Exception as e:
                fail("%s: rendered" % name, repr(e))
    finally:
        b.close()
    print("# %d pages rendered and checked in %.1f s" % (len(pages), time.time() - start))


if __name__ == "__main__":
    main()
