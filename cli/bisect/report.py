"""The answer of `attngate bisect` in words: one sentence per changed row, the same sentences on
the console, in Markdown and in an HTML section (a page of its own, or pasted into a report)."""
import html


def listed(names, most=5):
    names = list(names)
    if len(names) <= most:
        return ", ".join(names)
    return ", ".join(names[:most]) + f" and {len(names) - most} more"


def release_said(r):
    if r.get("kind") == "added":
        return f"adding {r['package']} {r['new']}"
    if r.get("kind") == "removed":
        return f"removing {r['package']} {r['old']}"
    said = f"between {r['package']} {r['before']} and {r['after']}"
    notes = []
    if r.get("moved_with"):
        notes.append(f"{listed(r['moved_with'])} moved with it")
    if r.get("unmoved"):
        notes.append(f"{listed(r['unmoved'])} did not")
    if r.get("skipped"):
        notes.append(f"{listed(r['skipped'])} could not be installed or run, skipped")
    return said + (f" ({'; '.join(notes)})" if notes else "")


def row_sentence(entry):
    kernel_case = entry["row"].split("/", 1)
    head = f"{kernel_case[1]} on {kernel_case[0]}: {entry['change']}"
    if entry.get("flaky"):
        return head + ": flaky (did not show again on a second run of the new side), not blamed"
    if entry.get("unfinished") and not entry.get("releases") and not entry.get("commit"):
        return head + f": not found ({entry['unfinished']})"
    if entry.get("commit"):
        c = entry["commit"]
        return head + f" at commit {c['sha'][:12]} \"{c['subject']}\" (after {c['good'][:12]})"
    rel = entry.get("releases", [])
    said = head + " " + " together with ".join(release_said(r) for r in rel)
    if len(rel) > 1:
        said += " (neither moves it alone)"
    if entry.get("pulled_in"):
        said += f"; {listed(entry['pulled_in'])} had to move too"
    if entry.get("untested"):
        sets = ["+".join(names) for names in entry["untested"]]
        said += (f"; {len(sets)} package set(s) could not be installed or run ({listed(sets, 3)}), so this is"
                 " the smallest set among those tried, not surely the cause")
    if entry.get("unfinished"):
        said += f" [{entry['unfinished']}]"
    return said


def footer(report):
    minutes = report["seconds"] / 60
    took = f"{minutes:.1f} min" if minutes >= 1 else f"{report['seconds']:.0f} s"
    if report["mode"] == "git":
        work = f"A and {report['probes']} commits after it tried ({report['builds']} built, {report['reused']} from the cache)"
    else:
        work = f"{report['environments']} environments ({report['built']} built, {report['reused']} from the cache)"
    return f"{work}, {report['ab_runs']} ab runs, {took}"


def nothing_moved(report):
    """What is said when no row is reported."""
    if report.get("unfinished"):
        return f"not found ({report['unfinished']})"
    if report["mode"] == "git":
        skipped = report.get("skipped") or []
        return f"nothing in {report['range']} moved a row" + (
            f" ({len(skipped)} commits that do not build skipped)" if skipped else "")
    return "no row differs"


def later_said(report):
    """Git mode stops at the first commit that moves a row: what a later one may have moved is not searched."""
    if not report.get("later"):
        return []
    after, last = report["later"].split("..")
    return [f"the commits after it were not searched: --git {after[:12]}..{last[:12]} looks for a later one"]


def sentences(report):
    return ([row_sentence(e) for e in report["rows"]] or [nothing_moved(report)]) + later_said(report)


def console(report):
    lines = [row_sentence(e) + f"; {footer(report)}" for e in report["rows"]] or [f"{nothing_moved(report)}; {footer(report)}"]
    return "\n".join(lines + later_said(report)) + "\n"


def markdown(report):
    side = (f"`{report['a_lock']}` → `{report['b_lock']}`" if report["mode"] == "locks"
            else f"commits `{report['range']}`")
    lines = [f"### attngate bisect: {side} on {report['suite']}", ""]
    lines += [f"- {s}" for s in sentences(report)]
    lines += ["", f"{footer(report)}.", ""]
    return "\n".join(lines)


def html_section(report):
    items = "".join(f"<li>{html.escape(s)}</li>" for s in sentences(report))
    title = html.escape(f"attngate bisect on {report['suite']}")
    return (f'<section class="bisect"><h2>{title}</h2><ul>{items}</ul>'
            f"<p>{html.escape(footer(report))}</p></section>")


def html_page(report):
    return ("<!doctype html><html><head><meta charset=\"utf-8\"><title>attngate bisect</title></head><body>"
            + html_section(report) + "</body></html>\n")
