package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"gonum.org/v1/plot/plotutil"

	"github.com/tiler-dev/tiler/replay"
)

// requireChromium skips under -short and fails (not skips) when chromium is missing: the check of
// the HTML report in a real browser is part of the suite (`make chromium` installs it).
func requireChromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("opens the report in headless Chromium; skipped with -short")
	}
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found in PATH: run `make chromium` (hack/install-chromium.sh) first")
	}
	return path
}

// pageFacts is what the page shows a reader, as headless Chromium laid it out.
type pageFacts struct {
	Title   string     `json:"title"`
	Heads   []string   `json:"heads"`
	Summary string     `json:"summary"`
	Rows    [][]string `json:"rows"`
	Figures []struct {
		SVG    bool    `json:"svg"`
		X, Y   float64 // the figure's box in page coordinates (CSS pixels)
		W, H   float64
		Drawn  int    `json:"drawn"` // paths with a non-empty box
		Text   string `json:"text"`  // the figure's text (title, axes, legend)
		Inside bool   `json:"inside"`
	} `json:"figures"`
	Images []struct {
		Src string `json:"src"`
		OK  bool   `json:"ok"`
	} `json:"images"`
	Broken []string `json:"broken"`
}

// factsJS collects pageFacts after load: every inline figure's box and drawn paths, every image's
// decode state, the summary and savings tables, and anything the parser or loader rejected.
const factsJS = `(() => {
  const sx = window.scrollX, sy = window.scrollY;
  const figures = [...document.querySelectorAll('svg')].filter(s => !s.parentElement.closest('svg')).map(s => {
    const r = s.getBoundingClientRect();
    const drawn = [...s.querySelectorAll('path')].filter(p => { const b = p.getBBox(); return b.width > 0 || b.height > 0; }).length;
    return {svg: s instanceof SVGSVGElement, X: r.left + sx, Y: r.top + sy, W: r.width, H: r.height, drawn,
      text: [...s.querySelectorAll('text')].map(t => t.textContent).join('|'),
      inside: r.left >= 0 && r.right <= document.documentElement.scrollWidth};
  });
  const images = [...document.images].map(i => ({src: i.currentSrc || i.src, ok: i.complete && i.naturalWidth > 0}));
  const broken = [];
  document.querySelectorAll('parsererror').forEach(e => broken.push('parsererror: ' + e.textContent.slice(0, 200)));
  document.querySelectorAll('object, iframe, embed, video, audio, link').forEach(e => broken.push('external element ' + e.outerHTML.slice(0, 200)));
  return {title: document.title, heads: [...document.querySelectorAll('h1, h2')].map(h => h.textContent.trim()),
    summary: (document.querySelector('pre') || {textContent: ''}).textContent,
    rows: [...document.querySelectorAll('table tr')].map(tr => [...tr.cells].map(c => c.textContent.trim())),
    figures, images, broken};
})()`

// TestReplayHTMLInChromium writes the report of an hour of the trace under two policies, opens it
// in headless Chromium and checks what a reader sees: three figures laid out, drawn and visible on
// the screenshot, every image decoded, the summary with every policy's $ and the bound, the savings
// table with the dollars the report computed, and no error, failed load or unparsed markup.
func TestReplayHTMLInChromium(t *testing.T) {
	chromium := requireChromium(t)
	html := filepath.Join(t.TempDir(), "report.html")
	out, err := runFleetReplayCmd(t, "--pods=../../"+benchDefaultPods, "--hours=1", "--policies=tiler,whole-gpu", "--json", "--html="+html)
	if err != nil {
		t.Fatal(err)
	}
	var rep replay.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Results) != 2 || rep.Bound == nil {
		t.Fatalf("report %+v", rep)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ctx, cancel = chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900))...)
	defer cancel()
	var (
		mu       sync.Mutex
		problems []string
	)
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	ctx, cancel = chromedp.NewContext(ctx, chromedp.WithListener(func(ev any) {
		switch ev := ev.(type) {
		case *cdpruntime.EventExceptionThrown:
			note("exception: %s", ev.ExceptionDetails.Text)
		case *cdpruntime.EventConsoleAPICalled:
			if ev.Type == cdpruntime.ConsoleAPICalledTypeError || ev.Type == cdpruntime.ConsoleAPICalledTypeWarning {
				note("console %s", ev.Type)
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				note("%s %s: %s (%s)", ev.Entry.Source, ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventLoadingFailed:
			note("load failed: %s %s", ev.Type, ev.ErrorText)
		}
	}))
	defer cancel()

	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+html)); err != nil {
		t.Fatalf("opening the report in chromium: %v", err)
	}
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[pageFacts](factsJS))
	if err != nil {
		t.Fatalf("reading the page: %v", err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	mu.Lock()
	for _, p := range problems {
		t.Errorf("browser reported %s", p)
	}
	mu.Unlock()

	if want := "tiler replay: " + rep.Workload; facts.Title != want {
		t.Errorf("title %q, want %q", facts.Title, want)
	}
	for _, b := range facts.Broken {
		t.Errorf("broken element: %s", b)
	}
	for _, img := range facts.Images {
		if !img.OK {
			t.Errorf("image %s did not load or decode", img.Src)
		}
	}
	for _, h := range []string{"Summary", "Savings of tiler", "Over time"} {
		if !slices.Contains(facts.Heads, h) {
			t.Errorf("headings %q lack %q", facts.Heads, h)
		}
	}

	// The summary: one line per policy with its $ as the report computed it, and the bound.
	lines := strings.Split(facts.Summary, "\n")
	for _, x := range rep.Results {
		if !hasLine(lines, x.Policy, fmt.Sprintf("%.2f", x.Cost)) {
			t.Errorf("summary lacks %s at $%.2f:\n%s", x.Policy, x.Cost, facts.Summary)
		}
	}
	if !hasLine(lines, replay.PolicyClairvoyant, fmt.Sprintf("%.2f", rep.Bound.Cost)) {
		t.Errorf("summary lacks the bound at $%.2f:\n%s", rep.Bound.Cost, facts.Summary)
	}
	// The savings table: the header and tiler's saving against whole-gpu in dollars and percent.
	tiler, whole := rep.Result(replay.PolicyTiler), rep.Result("whole-gpu")
	wantRow := []string{"whole-gpu", fmt.Sprintf("%.2f", whole.Cost-tiler.Cost), fmt.Sprintf("%.0f %%", 100*(1-tiler.Cost/whole.Cost))}
	if len(facts.Rows) != 2 || strings.Join(facts.Rows[0], "|") != "against|$ saved|%" || strings.Join(facts.Rows[1], "|") != strings.Join(wantRow, "|") {
		t.Errorf("savings table %q, want the header and %q", facts.Rows, wantRow)
	}

	// The figures: laid out at a readable size inside the page, their lines drawn, their titles
	// and legends rendered, and visibly painted on the screenshot.
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	titles := []string{"Cost over time", "GPUs bought and requested", "Pending pods"}
	if len(facts.Figures) != len(titles) {
		t.Fatalf("%d figures on the page, want %d", len(facts.Figures), len(titles))
	}
	for i, f := range facts.Figures {
		name := titles[i]
		if !f.SVG || f.W < 400 || f.H < 150 || !f.Inside {
			t.Errorf("figure %q: svg %v, %.0f×%.0f px, inside the page %v; want an SVG of at least 400×150 inside the page", name, f.SVG, f.W, f.H, f.Inside)
		}
		for _, want := range append([]string{name, "hours"}, replay.PolicyTiler, "whole-gpu") {
			if !strings.Contains(f.Text, want) {
				t.Errorf("figure %q lacks the text %q (has %q)", name, want, f.Text)
			}
		}
		// gonum/plot draws a path per tick, grid line and plotted line; two policies make at least two.
		if f.Drawn < 10 {
			t.Errorf("figure %q: %d drawn paths", name, f.Drawn)
		}
		// On the screenshot: ink in the figure's box, and every policy's line in its legend colour
		// (the report colours result i with plotutil.Color(i)).
		lineColours := make([]color.Color, len(rep.Results))
		for j := range rep.Results {
			lineColours[j] = plotutil.Color(j)
		}
		ink, perColour := painted(img, f.X, f.Y, f.W, f.H, lineColours)
		if ink < 0.01 {
			t.Errorf("figure %q on the screenshot: %.1f%% of its box painted; want a visible plot (≥1%%)", name, 100*ink)
		}
		for j, n := range perColour {
			if n < 50 {
				t.Errorf("figure %q on the screenshot: the %s line has %d pixels in its colour; want ≥50", name, rep.Results[j].Policy, n)
			}
		}
	}
	if t.Failed() {
		t.Logf("screenshot of the page: %d bytes PNG, %v", len(shot), img.Bounds())
	}
}

// painted is the share of non-white pixels inside a box of the screenshot and, for each of the
// colours, how many pixels there are within a small distance of it (anti-aliasing blends edges).
func painted(img image.Image, x, y, w, h float64, colours []color.Color) (float64, []int) {
	counts := make([]int, len(colours))
	r := image.Rect(int(x), int(y), int(x+w), int(y+h)).Intersect(img.Bounds())
	if r.Empty() {
		return 0, counts
	}
	near := func(a, b uint32) bool { return max(a, b)-min(a, b) < 0x1800 }
	ink := 0
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			cr, cg, cb, _ := img.At(px, py).RGBA()
			if cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				ink++
			}
			for i, c := range colours {
				wr, wg, wb, _ := c.RGBA()
				if near(cr, wr) && near(cg, wg) && near(cb, wb) {
					counts[i]++
				}
			}
		}
	}
	return float64(ink) / float64(r.Dx()*r.Dy()), counts
}

func hasLine(lines []string, fields ...string) bool {
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) >= len(fields) && strings.Join(f[:len(fields)], " ") == strings.Join(fields, " ") {
			return true
		}
	}
	return false
}
