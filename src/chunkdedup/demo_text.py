"""Templates for the demo corpus: departments, policy families, sentences and the shared clauses.

All text here is original and ASCII (so it also fits the latin-1 core fonts of a PDF). Sentence
templates use ``[a|b]`` for a wording choice made once per family and ``{name}`` for a value filled
per version (``{days}``, ``{amount}``, ...) or per family (``{topic}``, ``{owner}``, ...).
"""

from __future__ import annotations

COMPANY = "Northwind Holdings"
FOOTER = (
    "CONFIDENTIAL - Northwind Holdings internal use only. "
    "Do not distribute outside the company without written approval."
)

# (department, policy owner, ((family slug, title, topic), ...)); topics read well after "about".
DEPARTMENTS: tuple[tuple[str, str, tuple[tuple[str, str, str], ...]], ...] = (
    ("hr", "the Chief People Officer", (
        ("remote-work", "Remote Work Policy", "remote and hybrid work"),
        ("parental-leave", "Parental Leave Policy", "parental leave"),
        ("performance-reviews", "Performance Review Policy", "performance reviews"),
        ("recruitment", "Recruitment and Hiring Policy", "recruitment and hiring"),
    )),
    ("finance", "the Finance Controller", (
        ("travel-expenses", "Travel Expenses Policy", "business travel and expenses"),
        ("procurement", "Procurement Policy", "purchasing and procurement"),
        ("corporate-cards", "Corporate Card Policy", "corporate card use"),
        ("invoice-payments", "Supplier Payment Policy", "supplier invoice payments"),
    )),
    ("security", "the Chief Information Security Officer", (
        ("access-control", "Access Control Policy", "access to company systems"),
        ("incident-response", "Incident Response Policy", "security incident response"),
        ("password-standards", "Password Standard", "passwords and authentication"),
        ("encryption", "Encryption Policy", "data encryption"),
    )),
    ("legal", "the General Counsel", (
        ("records-retention", "Records Retention Policy", "records retention"),
        ("conflicts-of-interest", "Conflicts of Interest Policy", "conflicts of interest"),
        ("contract-signing", "Contract Signature Policy", "contract review and signature"),
        ("gifts-hospitality", "Gifts and Hospitality Policy", "gifts and hospitality"),
    )),
    ("it", "the Head of IT Operations", (
        ("acceptable-use", "Acceptable Use Policy", "the use of IT resources"),
        ("software-installation", "Software Installation Policy", "software installation"),
        ("device-management", "Mobile Device Policy", "mobile devices"),
        ("backup-recovery", "Backup and Recovery Policy", "data backup and recovery"),
    )),
    ("facilities", "the Facilities Director", (
        ("office-access", "Office Access Policy", "office access"),
        ("workplace-safety", "Workplace Safety Policy", "workplace health and safety"),
        ("visitor-management", "Visitor Management Policy", "visitor management"),
        ("parking-commuting", "Parking and Commuting Policy", "parking and commuting"),
    )),
)

APPROVERS = ("a Vice President", "the department head", "a member of the Executive Committee",
             "the budget holder")
SYSTEMS = ("the Policy Portal", "the ServiceDesk tool", "the Expense Portal", "the HR Self-Service site")

# An intranet page: the <style> and both <script> blocks are not text and must be dropped.
HTML_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title} - {company}</title>
<style>body {{ font-family: Arial, sans-serif; max-width: 48em; }} .meta {{ color: #555; }}</style>
<script>window.portal = {{ page: "{family}", track: function () {{ return 42; }} }};</script>
</head>
<body>
<h1>{title}</h1>
<p class="meta">{meta}</p>
<main>
{body}
</main>
<footer><p>{footer}</p></footer>
<script>document.querySelectorAll("a").forEach(function (a) {{ a.rel = "noopener"; }});</script>
</body>
</html>
"""

SECTION_HEADINGS = ("1. Purpose and scope", "2. Policy statements", "3. Procedure", "4. Compliance")

# Sentences with a per-version value: a later version changes some of these numbers.
NUMBER_SENTENCES = (
    "Requests about {topic} must be submitted [at least|no later than] {days} days before the "
    "[planned|requested] start date.",
    "Approved claims are reimbursed within {days} days of receipt of a complete request, i.e. one "
    "that includes every required receipt.",
    "Any single item above {amount} requires prior written approval from {approver}.",
    "Spending under this policy may not exceed {limit} per quarter without a documented business "
    "case.",
    "Late submissions incur a processing fee of {pct} of the claimed amount, capped at {amount}.",
    "{Owner} reviews this policy every {months} months, or sooner if the [law|regulation] changes.",
    "Incidents involving {topic} must be reported to {owner} within {hours} hours of discovery, "
    "even if the facts are still incomplete.",
    "No more than {count} exceptions may be granted to the same employee in any calendar year.",
    "Records created under this policy are kept for {months} months and then [destroyed|deleted] "
    "securely.",
    "The next scheduled review of this policy is due on {review_date}.",
    "Employees who spend more than {hours} hours a week on work under this policy must record the "
    "time in {system}.",
    "Where a vendor charges more than {pct} above the agreed rate, the difference is not reimbursed.",
    "A second approver is required for amounts above {limit}, e.g. for multi-year commitments.",
    "Managers must respond within {days} business days; [unanswered|open] requests escalate "
    "automatically to {approver}.",
    "Training on {topic} is mandatory for new hires and must be completed within {days} days of "
    "the start date.",
    "Up to {count} team members may share a single approval, provided the total stays below {limit}.",
    "A budget variance of up to {pct} is tolerated; anything larger must be explained in writing.",
)

# Sentences that stay the same across versions.
PLAIN_SENTENCES = (
    "This policy sets out how {company} [manages|governs] {topic} across all of its operating "
    "companies.",
    "It applies to all employees, contractors and temporary staff of {company} Inc. and its "
    "subsidiaries.",
    "The purpose is to make sure that decisions about {topic} are consistent, fair and properly "
    "documented.",
    "{Owner} is accountable for the day-to-day operation of this policy.",
    "Line managers are expected to explain the rules on {topic} to their teams and to answer "
    "questions [promptly|without delay].",
    "Requests are logged in {system}, which keeps a full audit trail of every approval and rejection.",
    "Where local law in a country other than the U.S. imposes stricter rules, the stricter rule "
    "applies.",
    "Employees should consult {owner} if they are unsure whether a particular case falls under "
    "this policy.",
    "Decisions must rest on a documented business need, i.e. not on personal preference or "
    "convenience.",
    "All supporting documents, e.g. receipts, approvals and correspondence, must be attached to "
    "the request in {system}.",
    "Managers must not approve their own requests, nor requests from a close family member.",
    "Approvals granted under a previous version of this policy remain valid until they expire.",
    "The rules in this section apply equally to full-time and part-time staff.",
    "Questions about {topic} that are not answered here should be [raised with|put to] {owner} in "
    "writing.",
    "Exceptions must be requested in advance; retroactive approval is given only in [rare|unusual] "
    "circumstances.",
    "The status of each request, e.g. pending, approved or rejected, is shown on the dashboard of "
    "{system}.",
    "Staff based outside the U.S. should follow the local addendum published by {owner}.",
    "Where this policy conflicts with a collective agreement, the agreement prevails.",
    "Every decision should be traceable, i.e. it must be possible to see who approved what and when.",
    "Teams are encouraged to [share|discuss] good practice on {topic} at their regular meetings.",
    "New or changed procedures for {topic} must be agreed with {owner} before they are used.",
    "Temporary arrangements last no longer than the current financial year unless they are renewed.",
    "Suppliers involved in {topic} must accept the {company} supplier code of conduct before any "
    "work starts.",
    "Internal Audit may sample requests at any time and will report its findings to {owner}.",
)

LIST_INTROS = (
    "Before a request about {topic} is approved, the requester must:",
    "The following steps apply to every request about {topic}:",
    "To complete the process, the responsible manager must:",
)
LIST_ITEMS = (
    "confirm that the request fits within the approved budget and cost center",
    "attach every supporting document, e.g. quotes, receipts or signed contracts",
    "obtain approval from {approver} for any amount above {amount}",
    "record the decision in {system} within {days} days",
    "tell {owner} about any departure from the standard process",
    "check that no conflict of interest exists, as defined by the legal department",
    "keep a copy of the approval for at least {months} months",
    "inform the people affected of the outcome and of any conditions attached to it",
)

# Clauses copied verbatim between policies of different families: content, not chrome.
SHARED_CLAUSES: tuple[tuple[str, str], ...] = (
    ("data-protection",
     "Personal data collected under this policy is processed only for the purpose for which it was "
     "collected, is stored in approved systems, and is shared on a need-to-know basis. Requests from "
     "individuals to see, correct or erase their data must be forwarded to the Privacy Office within "
     "5 business days. Transfers of personal data outside the U.S. or the European Economic Area "
     "require a transfer assessment, e.g. standard contractual clauses, approved in advance."),
    ("exceptions-approval",
     "Exceptions to this policy may be granted only in writing by the policy owner, after "
     "consultation with the Legal department where the exception carries legal or regulatory risk. "
     "Each exception must state its reason, its scope and an end date no more than 12 months "
     "ahead. Exceptions are recorded in the central exceptions register and reviewed twice a year, "
     "i.e. in January and July."),
    ("reporting-violations",
     "Anyone who suspects a breach of this policy should report it to their manager, to the "
     "Compliance team, or anonymously through the Ethics Line, which is run by an independent "
     "provider and is available 24 hours a day. Northwind Holdings does not tolerate retaliation "
     "against anyone who raises a concern in good faith. Reports are acknowledged within 3 "
     "business days and investigated confidentially."),
    ("records-and-audit",
     "Documents that show compliance with this policy, e.g. approvals, receipts and training "
     "records, must be kept for at least 7 years, or longer where local law requires it. Internal "
     "Audit reviews a sample of at least 2.5% of the relevant transactions every year and reports "
     "the results to the Audit Committee of Northwind Holdings Inc."),
)
