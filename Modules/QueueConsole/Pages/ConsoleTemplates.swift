import Mustache

/// The console's templates, compiled into the binary. Every `{{value}}` is HTML-escaped
/// (`<`, `>`, `&`, `"`, `'`); no template uses the unescaped `{{{…}}}` or `{{&…}}`, and no
/// value from the queue is ever put in an `href` or `action` (links carry ids and
/// percent-encoded filters only). No script, no inline style: the stylesheet is served from
/// the console itself, as the Content-Security-Policy requires.
enum ConsoleTemplates {
    static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        // The templates are constants: one that does not parse is a bug caught by every test.
        for (name, text) in [("head", head), ("foot", foot), ("overview", overview), ("entries", entries), ("entry", entry), ("confirm", confirm)] {
            try! library.register(text, named: name)
        }
        return library
    }()

    static func render<Content: Encodable & Sendable>(_ page: Page<Content>, _ template: String) -> String {
        library.render(page, withTemplate: template) ?? ""
    }

    static let head = """
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>{{title}} · Courier queue</title>
    {{#hasRefresh}}<meta http-equiv="refresh" content="{{refresh}}">{{/hasRefresh}}
    <link rel="stylesheet" href="{{prefix}}/console.css">
    </head><body>
    <header><nav><a href="{{prefix}}/{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}">Overview</a> <a href="{{prefix}}/entries{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}">Entries</a></nav>
    <form method="get" action="{{route}}" class="refresh">{{#kept}}<input type="hidden" name="{{name}}" value="{{value}}">{{/kept}}<label>Reload every <select name="refresh">{{#refreshOptions}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/refreshOptions}}</select></label><button>Set</button></form>
    <span class="user">{{user}}{{^canAct}} (read-only){{/canAct}}</span></header>
    <main>
    {{#hasNotice}}<p class="notice">{{notice}}</p>{{/hasNotice}}

    """

    static let foot = """
    </main></body></html>

    """

    static let overview = """
    {{> head}}
    {{#content}}
    <h1>Queue</h1>
    {{#queuePaused}}<p class="paused">The queue is paused: no drainer claims its entries.</p>{{/queuePaused}}
    {{#hasStuck}}<p class="notice stuck">{{counts.stuck}} blocked entries wait for each other in a loop: nothing will release them. Release each one (it is then due, waiting for nothing) or discard it, from its page (<a href="{{prefix}}/entries?state=blocked">the blocked entries</a>), or run sync release --stuck.</p>{{/hasStuck}}
    <table class="counts">
    <tr><th class="state-pending">Pending</th><td><a href="{{prefix}}/entries?state=pending">{{counts.pending}}</a></td></tr>
    <tr><th>Due now</th><td>{{counts.due}}</td></tr>
    <tr><th>Waiting for the network</th><td>{{counts.waitingForNetwork}}</td></tr>
    <tr><th class="state-inflight">In flight</th><td><a href="{{prefix}}/entries?state=inflight">{{counts.inflight}}</a></td></tr>
    <tr><th>Held by a dead owner</th><td>{{counts.inflightOrphaned}}</td></tr>
    <tr><th class="state-delivered">Delivered</th><td><a href="{{prefix}}/entries?state=delivered">{{counts.delivered}}</a></td></tr>
    <tr><th class="state-dead">Dead</th><td><a href="{{prefix}}/entries?state=dead">{{counts.dead}}</a></td></tr>
    <tr><th class="state-blocked">Waiting for other entries</th><td><a href="{{prefix}}/entries?state=blocked">{{counts.blocked}}</a></td></tr>
    {{#hasStuck}}<tr><th class="state-blocked">Of those, stuck</th><td class="stuck">{{counts.stuck}}</td></tr>{{/hasStuck}}
    <tr><th class="state-conflict">Conflicts for an operator</th><td><a href="{{prefix}}/entries?state=conflict">{{counts.conflict}}</a></td></tr>
    </table>
    <p>Oldest pending: {{#hasOldestPending}}{{oldestPendingAt}} ({{oldestPendingAgeSeconds}} s ago){{/hasOldestPending}}{{^hasOldestPending}}none{{/hasOldestPending}}.
    Last delivery: {{#hasLastDelivery}}{{lastDeliveredAt}}{{/hasLastDelivery}}{{^hasLastDelivery}}none{{/hasLastDelivery}}.
    Held back by pauses: {{pendingHeldByPauses}}.</p>
    <p>Delivered in the last minute: {{deliveredLastMinute}}; in the last 5 minutes: {{deliveredLastFiveMinutes}}.</p>
    <h2>The last hour</h2>
    <figure class="chart">{{#activity}}{{{svg}}}<figcaption>{{delivered}} delivered and {{failed}} failed in the last hour, per minute; hover a minute for its numbers.</figcaption>{{/activity}}</figure>
    {{#hasGroups}}<h2>By group</h2>
    {{^talliedAll}}<p class="note">Groups and names count the newest {{tallied}} entries.</p>{{/talliedAll}}
    <table class="tally"><thead><tr><th>Group</th><th>Pending</th><th>In flight</th><th>Delivered</th><th>Dead</th>{{#canAct}}<th></th>{{/canAct}}</tr></thead><tbody>
    {{#groups}}<tr><td>{{#hasQuery}}<a href="{{prefix}}/entries?{{query}}">{{label}}</a>{{/hasQuery}}{{^hasQuery}}{{label}}{{/hasQuery}}{{#paused}} <span class="paused">paused</span>{{/paused}}</td><td>{{pending}}</td><td>{{inflight}}</td><td>{{delivered}}</td><td>{{dead}}</td>
    {{#canAct}}<td>{{#isGroup}}{{#pausedItself}}<form method="post" action="{{prefix}}/resume{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><input type="hidden" name="group" value="{{key}}"><button>Resume</button></form>{{/pausedItself}}{{^pausedItself}}<form method="post" action="{{prefix}}/pause{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><input type="hidden" name="group" value="{{key}}"><button>Pause</button></form>{{/pausedItself}}{{/isGroup}}</td>{{/canAct}}</tr>
    {{/groups}}</tbody></table>{{/hasGroups}}
    {{#hasNames}}<h2>By name</h2>
    <table class="tally"><thead><tr><th>Name</th><th>Pending</th><th>In flight</th><th>Delivered</th><th>Dead</th></tr></thead><tbody>
    {{#names}}<tr><td>{{#hasQuery}}<a href="{{prefix}}/entries?{{query}}">{{label}}</a>{{/hasQuery}}{{^hasQuery}}{{label}}{{/hasQuery}}</td><td>{{pending}}</td><td>{{inflight}}</td><td>{{delivered}}</td><td>{{dead}}</td></tr>
    {{/names}}</tbody></table>{{/hasNames}}
    {{#hasOrigins}}<h2>Origins held</h2>
    <table class="tally"><thead><tr><th>Origin</th><th>Circuit</th><th>Paused until</th><th>Concurrency</th><th>Limit</th><th>In flight</th>{{#canAct}}<th></th>{{/canAct}}</tr></thead><tbody>
    {{#origins}}<tr><td>{{origin}}</td><td>{{#open}}<span class="paused">open</span> since {{openSince}} after {{failures}} failures (last: {{lastError}}), next probe {{nextProbe}}{{/open}}{{^open}}{{#hasFailures}}{{failures}} failures in a row{{/hasFailures}}{{/open}}</td><td>{{#paused}}<span class="paused">paused</span> until {{pausedUntil}} (after a {{pauseStatus}}){{/paused}}</td><td>{{#shrunk}}shrunk to {{concurrency}}{{/shrunk}}</td><td>{{limit}}</td><td>{{inflight}}</td>
    {{#canAct}}<td>{{#canResume}}<form method="post" action="{{prefix}}/resume{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><input type="hidden" name="origin" value="{{origin}}"><button>{{#open}}Close the circuit{{/open}}{{^open}}Resume{{/open}}</button></form>{{/canResume}}</td>{{/canAct}}</tr>
    {{/origins}}</tbody></table>{{/hasOrigins}}
    {{#hasPausedGroups}}<h2>Paused groups</h2><ul>
    {{#pausedGroups}}<li><a href="{{prefix}}/entries?{{query}}">{{name}}</a>
    {{#canAct}}<form method="post" action="{{prefix}}/resume{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><input type="hidden" name="group" value="{{name}}"><button>Resume</button></form>{{/canAct}}</li>
    {{/pausedGroups}}</ul>{{/hasPausedGroups}}
    {{#canAct}}
    <h2>Actions</h2>
    {{#queuePaused}}<form method="post" action="{{prefix}}/resume{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><button>Resume the queue</button></form>{{/queuePaused}}
    {{^queuePaused}}<form method="post" action="{{prefix}}/pause{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><button>Pause the queue</button></form>{{/queuePaused}}
    <form method="post" action="{{prefix}}/pause{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><label>Group <input name="group" required></label><button>Pause group</button></form>
    <form method="post" action="{{prefix}}/purge-delivered{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><button>Purge delivered entries</button></form>
    {{/canAct}}
    {{/content}}
    {{> foot}}
    """

    static let entries = """
    {{> head}}
    {{#content}}
    <h1>Entries</h1>
    <form method="get" action="{{prefix}}/entries" class="filter">
    <label>State <select name="state"><option value="">any</option>{{#stateOptions}}<option{{#selected}} selected{{/selected}}>{{value}}</option>{{/stateOptions}}</select></label>
    {{#filter}}
    <label>Group <input name="group" value="{{group}}"></label>
    <label>Name <input name="name" value="{{name}}"></label>
    <label>Origin <input name="origin" value="{{origin}}" placeholder="https://api.example.com"></label>
    <label>Id <input name="id" value="{{id}}" inputmode="numeric"></label>
    {{/filter}}
    {{#hasRefresh}}<input type="hidden" name="refresh" value="{{refresh}}">{{/hasRefresh}}
    <button>Filter</button></form>
    {{#isEmpty}}<p>No entries match.</p>{{/isEmpty}}
    {{^isEmpty}}
    {{#canAct}}<form method="post" action="{{prefix}}/bulk/retry{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}">{{/canAct}}
    <table class="entries"><thead><tr>{{#canAct}}<th></th>{{/canAct}}<th>Id</th><th>State</th><th>Request</th><th>Name</th><th>Group</th><th>Attempts</th><th>Status</th><th>Enqueued</th></tr></thead><tbody>
    {{#entries}}<tr>{{#canAct}}<td><input type="checkbox" name="id" value="{{id}}"></td>{{/canAct}}<td><a href="{{prefix}}/entries/{{id}}">{{id}}</a></td><td class="state-{{state}}">{{state}}</td><td>{{method}} {{url}}</td><td>{{name}}</td><td>{{group}}</td><td>{{attempts}}</td><td>{{lastStatus}}</td><td>{{createdAt}}</td></tr>
    {{/entries}}</tbody></table>
    {{#canAct}}<p><button>Retry selected</button> <button formaction="{{prefix}}/bulk/discard{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}">Discard selected</button> (at most 1,000)</p></form>{{/canAct}}
    {{/isEmpty}}
    {{#hasNext}}<p><a rel="next" href="{{prefix}}/entries?{{nextQuery}}">Next page</a></p>{{/hasNext}}
    {{#canAct}}{{^isEmpty}}<p>Every entry this filter matches, on every page:
    {{#filter}}<form method="post" action="{{prefix}}/bulk/retry-matching{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><input type="hidden" name="state" value="{{state}}"><input type="hidden" name="group" value="{{group}}"><input type="hidden" name="name" value="{{name}}"><input type="hidden" name="origin" value="{{origin}}"><button>Retry all matching…</button></form>
    <form method="post" action="{{prefix}}/bulk/discard-matching{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><input type="hidden" name="state" value="{{state}}"><input type="hidden" name="group" value="{{group}}"><input type="hidden" name="name" value="{{name}}"><input type="hidden" name="origin" value="{{origin}}"><button>Discard all matching…</button></form>{{/filter}}</p>{{/isEmpty}}{{/canAct}}
    {{/content}}
    {{> foot}}
    """

    static let entry = """
    {{> head}}
    {{#content}}
    <h1>Entry {{id}}</h1>
    <dl class="entry">
    <dt>State</dt><dd class="state-{{state}}">{{state}}{{#hasDeadReason}} ({{deadReason}}){{/hasDeadReason}}</dd>
    <dt>Request</dt><dd>{{method}} {{url}}</dd>
    <dt>Name</dt><dd>{{name}}</dd>
    <dt>Group</dt><dd>{{group}}</dd>
    <dt>Priority</dt><dd>{{priority}}</dd>
    <dt>Idempotency key</dt><dd>{{idempotencyKey}}</dd>
    {{#hasTrace}}<dt>Trace</dt><dd>{{#hasTraceURL}}<a href="{{traceURL}}" rel="noopener noreferrer">{{traceID}}</a>{{/hasTraceURL}}{{^hasTraceURL}}{{traceID}}{{/hasTraceURL}}</dd>{{/hasTrace}}
    {{#sealed}}<dt>Sealed</dt><dd>under key {{sealKeyID}} (the request is opened only to be sent)</dd>{{/sealed}}
    <dt>Headers</dt><dd><ul>{{#headers}}<li>{{name}}: {{#redacted}}<em>redacted</em>{{/redacted}}{{^redacted}}{{value}}{{/redacted}}</li>{{/headers}}</ul></dd>
    <dt>Body</dt><dd>{{#hasBody}}{{bodySize}} bytes, hidden{{/hasBody}}{{^hasBody}}none{{/hasBody}}</dd>
    <dt>Attempts</dt><dd>{{attempts}}</dd>
    <dt>Last status</dt><dd>{{lastStatus}}</dd>
    <dt>Last error</dt><dd>{{lastError}}</dd>
    <dt>Response excerpt</dt><dd><pre>{{responseExcerpt}}</pre></dd>
    <dt>Next attempt</dt><dd>{{nextAttemptAt}}</dd>
    <dt>Enqueued</dt><dd>{{createdAt}}</dd>
    <dt>Last attempt</dt><dd>{{lastAttemptAt}}</dd>
    <dt>Finished</dt><dd>{{finishedAt}}</dd>
    {{#hasParents}}<dt>Waits for</dt><dd><ul class="parents">{{#parents}}<li><a href="{{prefix}}/entries/{{.}}">entry {{.}}</a></li>{{/parents}}</ul> (when one dies: {{whenParentDies}}){{#takesValues}}; its request takes values from the responses of {{#responseSources}}entry {{.}} {{/responseSources}}{{/takesValues}}</dd>{{/hasParents}}
    {{#hasResponse}}<dt>Kept response</dt><dd class="kept-response">{{responseStatus}}, {{responseLength}} bytes{{#responseTruncated}} (cut at the entry's limit){{/responseTruncated}}<ul>{{#responseHeaders}}<li>{{name}}: {{value}}</li>{{/responseHeaders}}</ul><pre>{{responseBody}}</pre></dd>{{/hasResponse}}
    {{#responseSealed}}<dt>Kept response</dt><dd>sealed (the console has no keyring to read it)</dd>{{/responseSealed}}
    {{#hasChildren}}<dt>Waited for by</dt><dd><ul class="children">{{#children}}<li><a href="{{prefix}}/entries/{{.}}">entry {{.}}</a></li>{{/children}}</ul></dd>{{/hasChildren}}
    </dl>
    {{#canAct}}
    {{#canRetry}}<form method="post" action="{{prefix}}/entries/{{id}}/retry{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><button>Retry now</button></form>{{/canRetry}}
    {{#canDiscard}}<form method="post" action="{{prefix}}/entries/{{id}}/discard{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><button>Discard</button></form>{{/canDiscard}}
    {{#canRelease}}<form method="post" action="{{prefix}}/entries/{{id}}/release{{#hasRefresh}}?refresh={{refresh}}{{/hasRefresh}}"><button>Release (stop waiting)</button></form>{{/canRelease}}
    {{/canAct}}
    {{/content}}
    {{> foot}}
    """

    static let confirm = """
    {{> head}}
    {{#content}}
    <h1>{{verb}} every matching entry?</h1>
    <p>Filter: {{described}}.</p>
    {{#hasMatches}}
    <p class="notice">{{verb}} <strong>{{count}}</strong> entries ({{action}} applies to {{states}} entries). Entries enqueued from now on are left alone; those in flight when it runs are skipped.</p>
    <form method="post" action="{{confirm}}">{{#filter}}<input type="hidden" name="state" value="{{state}}"><input type="hidden" name="group" value="{{group}}"><input type="hidden" name="name" value="{{name}}"><input type="hidden" name="origin" value="{{origin}}">{{/filter}}<input type="hidden" name="through" value="{{through}}"><button>{{verb}} {{count}} entries</button></form>
    {{/hasMatches}}
    {{^hasMatches}}<p class="notice">No entry this filter matches can be changed by {{action}} (it applies to {{states}} entries).</p>{{/hasMatches}}
    <p><a href="{{prefix}}/entries?{{backQuery}}">Back to the entries</a></p>
    {{/content}}
    {{> foot}}
    """

    static let stylesheet = """
    body{font:14px/1.4 system-ui,sans-serif;margin:0}header{display:flex;justify-content:space-between;padding:.5em 1em;background:#223;color:#eee}
    header a{color:#fff;margin-right:1em}main{padding:1em}table{border-collapse:collapse}td,th{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left}
    .state-pending{color:#225}.state-inflight{color:#06c}.state-delivered{color:#070}.state-dead{color:#b00}.state-blocked,.state-superseded{color:#555}.state-conflict{color:#a60}.paused,.notice{background:#ffd;padding:.5em}form{display:inline-block;max-width:100%;margin:.2em}
    dl.entry dt{font-weight:bold}pre{white-space:pre-wrap;max-width:80em}
    figure.chart{margin:0;max-width:640px}figure.chart svg{display:block;width:100%;height:auto}figcaption{color:#444}
    header{flex-wrap:wrap;gap:.3em}table{display:block;max-width:100%;overflow-x:auto}td{overflow-wrap:anywhere}input,select{max-width:100%}
    dd{overflow-wrap:anywhere}

    """
}
