//! report.html in headless Chromium, of a chain and of a run with the
//! services graph's section: the page renders (the screenshot is not
//! blank) and logs nothing to the console (the report has no script,
//! so any console message is an error). A deliberately broken copy checks
//! that the console check really catches a JavaScript error.
//!
//! Skipped with a notice when /usr/bin/chromium is absent, unless
//! STORMSIM_REQUIRE_CHROMIUM is set (CI sets it and installs chromium).

use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

struct Page {
    png: Vec<u8>,
    console: Vec<String>,
}

fn open_in_chromium(html: &Path, work: &Path, tag: &str) -> Page {
    let shot = work.join(format!("{tag}.png"));
    let profile = work.join(format!("profile-{tag}"));
    let mut cmd = if Path::new("/usr/bin/timeout").exists() {
        let mut c = Command::new("/usr/bin/timeout");
        c.args(["120", CHROMIUM]);
        c
    } else {
        Command::new(CHROMIUM)
    };
    let out = cmd
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "chromium failed ({}): {stderr}",
        out.status
    );
    let console = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    Page {
        png: fs::read(&shot).expect("chromium wrote the screenshot"),
        console,
    }
}

/// (width, height, distinct colours, share of non-white pixels).
fn inspect(png_bytes: &[u8]) -> (u32, u32, usize, f64) {
    let decoder = png::Decoder::new(png_bytes);
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    let px = &buf[..info.buffer_size()];
    let mut colours = HashSet::new();
    let mut non_white = 0usize;
    for p in px.chunks(channels) {
        let rgb = [p[0], p[1], p[2]];
        colours.insert(rgb);
        if rgb.iter().any(|&c| c < 245) {
            non_white += 1;
        }
    }
    let total = (info.width * info.height) as f64;
    (
        info.width,
        info.height,
        colours.len(),
        non_white as f64 / total,
    )
}

#[test]
fn report_renders_in_headless_chromium_without_console_errors() {
    if !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("STORMSIM_REQUIRE_CHROMIUM").is_none(),
            "STORMSIM_REQUIRE_CHROMIUM is set but {CHROMIUM} is missing"
        );
        eprintln!(
            "notice: {CHROMIUM} not found; skipping the headless browser test of report.html"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    Command::new(env!("CARGO_BIN_EXE_stormsim"))
        .args(["run", "scenarios/quickstart.yaml", "--quiet", "--out"])
        .arg(&out)
        .status()
        .unwrap()
        .success()
        .then_some(())
        .expect("stormsim run succeeds");
    let report = out.join("report.html");
    let html = fs::read_to_string(&report).unwrap();
    assert!(!html.contains("<script"), "the report needs no script");
    for remote in ["src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(remote), "no network: found {remote}");
    }

    let page = open_in_chromium(&report, dir.path(), "report");
    assert!(
        page.console.is_empty(),
        "console messages: {:?}",
        page.console
    );
    let (w, h, colours, ink) = inspect(&page.png);
    assert_eq!((w, h), (1200, 2000));
    assert!(colours > 50, "only {colours} distinct colours: blank page?");
    assert!(ink > 0.03, "only {:.1}% non-white pixels", ink * 100.0);

    // A report with the services graph's section (the quickstart behind
    // one more layer: two services) renders as cleanly.
    let two = dir.path().join("two");
    Command::new(env!("CARGO_BIN_EXE_stormsim"))
        .args([
            "run",
            "scenarios/quickstart.yaml",
            "--quiet",
            "--set",
            "layers=[{name: edge, retry: {max_attempts: 2}}, {name: client, timeout: 500ms, retry: {max_attempts: 4}}]",
            "--out",
        ])
        .arg(&two)
        .status()
        .unwrap()
        .success()
        .then_some(())
        .expect("stormsim run succeeds");
    let graph_report = two.join("report.html");
    assert!(
        fs::read_to_string(&graph_report)
            .unwrap()
            .contains("<h2 id=\"services\">")
    );
    let page = open_in_chromium(&graph_report, dir.path(), "graph");
    assert!(
        page.console.is_empty(),
        "console messages: {:?}",
        page.console
    );
    let (_, _, colours, ink) = inspect(&page.png);
    assert!(colours > 50 && ink > 0.03, "{colours} colours, {ink} ink");

    // The check must fail on a page with a JavaScript error.
    let broken = dir.path().join("broken.html");
    fs::write(
        &broken,
        html.replace("</body>", "<script>noSuchFunction();</script></body>"),
    )
    .unwrap();
    let page = open_in_chromium(&broken, dir.path(), "broken");
    assert!(
        page.console.iter().any(|l| l.contains("noSuchFunction")),
        "a JavaScript error is caught: {:?}",
        page.console
    );
}
