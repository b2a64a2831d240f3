"""The mention table: phrases in sentences, each with the time it was said and
the span a careful reader takes it to mean. It is the spec of
``resolve_mentions`` (docs/evidence.md, "Time mentions"): tense cues in the
clause pick forward or backward, phrases that fix their own direction keep it,
no cue means the nearest occurrence, and a phrase whose two candidates are
about equally near is ambiguous (both candidates kept, none of them certain).

Expected spans: ``2024-01-31`` a day, ``2024-01`` a month, ``2024`` a year,
``2023-07-24..2023-07-30`` days (last one included), ``2024-07..2024-09``
months (last one included), ``2023-07-21T15`` an hour; ``A|B`` the two
candidates of an ambiguous mention; ``None`` no mention of that phrase.
"""

from __future__ import annotations

import datetime as _dt

import pytest

from chronomem.service.evidence.timemention import TimeMention, resolve_mentions

UTC = _dt.timezone.utc

# (id, text, said at, phrase, expected)
EN: list[tuple[str, str, str, str, str | None]] = [
    # the four sentences of issue 14
    ("last-day-is-jan31", "her last day is Jan 31", "2024-01-10", "Jan 31", "2024-01-31"),
    ("start-on-aug1", "I start on August 1st", "2024-01-10", "August 1st", "2024-08-01"),
    ("will-move-in-january", "we will move to MongoDB in January", "2023-12-15", "in January", "2024-01"),
    ("ready-on-monday", "ready on Monday", "2023-07-20", "on Monday", "2023-07-24"),
    # the same dates, past and without a cue
    ("last-day-was-jan31", "Her last day was Jan 31", "2024-01-10", "Jan 31", "2023-01-31"),
    ("last-day-no-cue", "Her last day: Jan 31", "2024-01-10", "Jan 31", "2024-01-31"),
    ("started-on-aug1", "I started on August 1st", "2024-01-10", "August 1st", "2023-08-01"),
    ("aug1-no-cue-ambiguous", "Onboarding: August 1st", "2024-01-10", "August 1st", "2023-08-01|2024-08-01"),
    ("moved-in-january", "We moved to MongoDB in January", "2023-12-15", "in January", "2023-01"),
    ("january-no-cue-nearest", "MongoDB migration in January", "2023-12-15", "in January", "2024-01"),
    ("was-ready-on-monday", "It was ready on Monday", "2023-07-20", "on Monday", "2023-07-17"),
    ("will-be-ready-on-monday", "The build will be ready on Monday", "2023-07-20", "on Monday", "2023-07-24"),
    ("monday-no-cue-ambiguous", "Standup on Monday", "2023-07-20", "on Monday", "2023-07-17|2023-07-24"),
    ("met-on-monday", "We met on Monday", "2023-07-20", "on Monday", "2023-07-17"),
    # weekdays
    ("last-tuesday", "We shipped it last Tuesday", "2023-07-20", "last Tuesday", "2023-07-18"),
    ("last-tuesday-in-future-clause", "I will review what broke last Tuesday", "2023-07-20", "last Tuesday",
     "2023-07-18"),
    ("next-tuesday-said-thursday", "Let's talk next Tuesday", "2023-07-20", "next Tuesday", "2023-07-25"),
    ("next-friday-said-tuesday-ambiguous", "Let's talk next Friday", "2023-07-18", "next Friday",
     "2023-07-21|2023-07-28"),
    ("next-monday-said-monday", "We meet again next Monday", "2023-07-17", "next Monday", "2023-07-24"),
    ("deploy-is-on-friday", "The deploy is on Friday", "2023-07-17", "on Friday", "2023-07-21"),
    ("deploy-was-on-friday", "The deploy was on Friday", "2023-07-17", "on Friday", "2023-07-14"),
    ("by-friday", "Please send it by Friday", "2023-07-18", "by Friday", "2023-07-21"),
    ("sick-on-wednesday", "I was sick on Wednesday", "2023-07-20", "on Wednesday", "2023-07-19"),
    ("see-her-this-monday", "I'll see her this Monday", "2023-07-20", "this Monday", "2023-07-24"),
    ("bare-friday-tomorrow", "Team lunch Friday", "2023-07-20", "Friday", "2023-07-21"),
    ("same-weekday-future", "We will meet on Thursday", "2023-07-20", "on Thursday", "2023-07-27"),
    ("same-weekday-past", "The demo was on Thursday", "2023-07-20", "on Thursday", "2023-07-13"),
    ("same-weekday-no-cue", "Demo on Thursday", "2023-07-20", "on Thursday", "2023-07-13|2023-07-27"),
    ("since-monday", "I've been sick since Monday", "2023-07-20", "since Monday", "2023-07-17"),
    ("until-friday", "I'm out until Friday", "2023-07-18", "until Friday", "2023-07-21"),
    ("moved-to-friday", "The deadline was moved to Friday", "2023-07-18", "Friday", "2023-07-21"),
    ("did-it-on-tuesday", "He did it on Tuesday", "2023-07-20", "on Tuesday", "2023-07-18"),
    # months
    ("painted-in-march", "in March I painted", "2023-05-08", "in March", "2023-03"),
    ("will-launch-in-march", "We will launch in March", "2023-05-08", "in March", "2024-03"),
    ("launched-in-march", "We launched in March", "2023-05-08", "in March", "2023-03"),
    ("release-is-in-may-this-month", "The release is in May", "2023-05-08", "in May", "2023-05"),
    ("closed-until-march", "The office is closed until March", "2023-11-20", "until March", "2024-03"),
    ("lived-until-march", "I lived in Berlin until March", "2023-11-20", "until March", "2023-03"),
    ("since-march", "I have worked here since March", "2023-11-20", "since March", "2023-03"),
    ("by-june", "We need a decision by June", "2023-11-20", "by June", "2024-06"),
    ("july-no-cue-ambiguous", "Budget review in July", "2024-01-10", "in July", "2023-07|2024-07"),
    ("early-february", "We go skiing in early February", "2023-12-15", "early February", "2024-02"),
    ("late-october-past", "The conference was in late October", "2024-01-10", "late October", "2023-10"),
    ("paris-in-april", "I'll be in Paris in April", "2023-05-08", "in April", "2024-04"),
    ("gonna-visit-in-june", "I'm gonna visit in June", "2023-05-08", "in June", "2023-06"),
    ("going-to-japan-in-october", "We're going to Japan in October", "2024-01-10", "in October", "2024-10"),
    ("went-to-japan-in-october", "She went to Japan in October", "2024-01-10", "in October", "2023-10"),
    # year boundaries
    ("december-about-january-future", "Kickoff is on January 8", "2023-12-20", "January 8", "2024-01-08"),
    ("december-about-january-past", "The kickoff was on January 8", "2023-12-20", "January 8", "2023-01-08"),
    ("january-about-december-past", "The holiday party was on December 22", "2024-01-05", "December 22",
     "2023-12-22"),
    ("january-about-december-no-cue", "Holiday party in December", "2024-01-05", "in December", "2023-12"),
    ("january-about-december-future", "The contract ends on Dec 31", "2024-01-05", "Dec 31", "2024-12-31"),
    ("december-about-jan3", "We will meet on Jan 3", "2023-12-28", "Jan 3", "2024-01-03"),
    ("next-month-over-new-year", "See you next month", "2023-12-15", "next month", "2024-01"),
    ("last-month-over-new-year", "It broke last month", "2024-01-10", "last month", "2023-12"),
    ("next-year-on-new-years-eve", "We expand next year", "2023-12-31", "next year", "2024"),
    ("last-year-on-new-years-day", "We grew last year", "2024-01-01", "last year", "2023"),
    ("july4-equally-near", "July 4 fireworks", "2024-01-03", "July 4", "2023-07-04|2024-07-04"),
    # next / last periods, whatever the clause tense
    ("next-week", "The audit is next week", "2023-07-20", "next week", "2023-07-24..2023-07-30"),
    ("last-week", "The audit was last week", "2023-07-20", "last week", "2023-07-10..2023-07-16"),
    ("last-week-in-future-clause", "I will tell you what we did last week", "2023-07-20", "last week",
     "2023-07-10..2023-07-16"),
    ("next-week-in-past-clause", "We finished the plan for next week", "2023-07-20", "next week",
     "2023-07-24..2023-07-30"),
    # in N days / N ago / fixed day words
    ("in-3-days", "The results come in 3 days", "2023-07-20", "in 3 days", "2023-07-23"),
    ("3-days-ago", "It failed 3 days ago", "2023-07-20", "3 days ago", "2023-07-17"),
    ("in-two-weeks", "We ship in two weeks", "2023-07-20", "in two weeks", "2023-08-03"),
    ("in-2-months", "The lease ends in 2 months", "2023-07-20", "in 2 months", "2023-09"),
    ("a-year-ago", "We met a year ago", "2023-07-20", "a year ago", "2022"),
    ("tomorrow-in-past-clause", "I said I would call tomorrow", "2023-07-20", "tomorrow", "2023-07-21"),
    ("yesterday-in-future-clause", "I will finish what I started yesterday", "2023-07-20", "yesterday",
     "2023-07-19"),
    # ordinals
    ("review-is-on-the-10th", "the review is on the 10th", "2023-05-08", "the 10th", "2023-05-10"),
    ("paid-on-the-3rd", "The invoice was paid on the 3rd", "2023-07-20", "the 3rd", "2023-07-03"),
    ("rent-due-on-the-3rd", "Rent is due on the 3rd", "2023-07-20", "the 3rd", "2023-08-03"),
    ("the-3rd-no-cue-ambiguous", "Payroll run: the 3rd", "2023-07-20", "the 3rd", "2023-07-03|2023-08-03"),
    ("meeting-moved-to-the-12th", "The meeting moved to the 12th", "2025-10-05", "the 12th", "2025-10-12"),
    ("happened-on-the-28th", "It happened on the 28th", "2024-01-05", "the 28th", "2023-12-28"),
    ("will-pay-on-the-2nd", "We will pay on the 2nd", "2023-12-28", "the 2nd", "2024-01-02"),
    ("its-on-the-15th", "It's on the 15th", "2023-07-20", "the 15th", "2023-08-15"),
    # quarters
    ("q3-2024", "Q3 2024 numbers", "2023-05-08", "Q3 2024", "2024-07..2024-09"),
    ("hire-in-q1", "We will hire in Q1", "2023-11-20", "Q1", "2024-01..2024-03"),
    ("q4-was-strong", "Q4 revenue was strong", "2024-01-15", "Q4", "2023-10..2023-12"),
    ("our-q2-this-quarter", "Our Q2 goals", "2023-05-08", "Q2", "2023-04..2023-06"),
    ("last-quarter", "Sales fell last quarter", "2023-05-08", "last quarter", "2023-01..2023-03"),
    ("next-quarter", "We hire next quarter", "2023-11-20", "next quarter", "2024-01..2024-03"),
    ("first-quarter-of-2022", "the first quarter of 2022", "2023-05-08", "first quarter of 2022",
     "2022-01..2022-03"),
    # explicit years keep their meaning
    ("explicit-year-future-clause", "The baby will be born on 7 May 2023", "2023-05-08", "7 May 2023",
     "2023-05-07"),
    ("in-2019-future-clause", "We will revisit what happened in 2019", "2023-05-08", "in 2019", "2019"),
    ("iso-date", "We signed on 2024-03-05", "2025-02-01", "2024-03-05", "2024-03-05"),
    ("month-year", "We launched in March 2024", "2025-01-10", "March 2024", "2024-03"),
    # several phrases, each with its own clause
    ("started-and-will-leave-1", "I started on August 1st and will leave on September 30", "2024-01-10",
     "August 1st", "2023-08-01"),
    ("started-and-will-leave-2", "I started on August 1st and will leave on September 30", "2024-01-10",
     "September 30", "2024-09-30"),
    ("cue-after-phrase", "On Monday and Tuesday we will ship", "2023-07-20", "On Monday", "2023-07-24"),
    ("agreed-to-launch", "Last week we agreed to launch on March 3", "2024-01-10", "March 3", "2024-03-03"),
    ("scheduled-for", "The exam is scheduled for May 3", "2024-01-10", "May 3", "2024-05-03"),
    ("had-been-on", "The exam had been on May 3", "2024-01-10", "May 3", "2023-05-03"),
    ("birthday-today", "My birthday is on March 5", "2024-03-05", "March 5", "2024-03-05"),
    ("agreed-that-is-on", "We met and agreed that the launch is on Monday", "2023-07-20", "on Monday",
     "2023-07-24"),
    ("think-it-was-ready", "I think it was ready on Monday", "2023-07-20", "on Monday", "2023-07-17"),
    ("was-and-will-1", "I was there on Monday and will go back on Friday", "2023-07-20", "on Monday",
     "2023-07-17"),
    ("was-and-will-2", "I was there on Monday and will go back on Friday", "2023-07-20", "on Friday",
     "2023-07-21"),
    ("past-then-future-sentence", "The demo went well. The next one is on the 3rd.", "2023-07-20", "the 3rd",
     "2023-08-03"),
    ("but-splits-clauses", "I missed it on Tuesday but I will join on Thursday", "2023-07-20", "on Tuesday",
     "2023-07-18"),
    ("postponed-to-june", "The launch was postponed to June", "2024-01-10", "to June", "2024-06"),
    ("from-march-to-may", "I was in Lisbon from March to May", "2024-01-10", "to May", "2023-05"),
    ("want-to-march-no-mention", "They want to march on", "2024-01-10", "to march", None),
    ("postponed-until-june", "The launch was postponed until June", "2024-01-10", "until June", "2024-06"),
    # "N units from now", "the day after tomorrow"
    ("3-days-from-now", "3 days from now", "2023-07-20", "3 days from now", "2023-07-23"),
    ("a-week-from-now", "The results are due a week from now", "2023-07-20", "a week from now", "2023-07-27"),
    ("10-days-from-today", "10 days from today", "2024-01-10", "10 days from today", "2024-01-20"),
    ("day-after-tomorrow-new-year", "We fly out the day after tomorrow", "2023-12-30", "the day after tomorrow",
     "2024-01-01"),
    ("day-before-yesterday-leap", "It broke the day before yesterday", "2024-03-01", "the day before yesterday",
     "2024-02-28"),
    ("day-after-tomorrow-no-the", "day after tomorrow works", "2023-07-20", "day after tomorrow", "2023-07-22"),
    # seasons (northern hemisphere, meteorological: spring Mar-May ... winter Dec-Feb)
    ("moved-in-the-summer", "We moved to Lisbon in the summer", "2024-01-10", "in the summer", "2023-06..2023-08"),
    ("will-launch-in-spring", "We will launch in spring", "2023-11-20", "in spring", "2024-03..2024-05"),
    ("summer-of-2021", "the summer of 2021", "2023-11-20", "summer of 2021", "2021-06..2021-08"),
    # weekends
    ("went-hiking-over-the-weekend", "We went hiking over the weekend", "2023-07-17", "over the weekend",
     "2023-07-15..2023-07-16"),
    # a deadline word right before the phrase, requests and result participles
    ("have-finished-before-friday", "Have the slides finished before Friday", "2023-07-18", "before Friday",
     "2023-07-21"),
    ("get-signed-before-the-3rd", "Please get the contract signed before the 3rd", "2023-07-20", "the 3rd",
     "2023-08-03"),
    ("need-by-q3", "we need the numbers by Q3", "2024-02-05", "Q3", "2024-07..2024-09"),
    ("must-land-before-the-15th", "The draft must land before the 15th", "2023-07-20", "the 15th", "2023-08-15"),
    ("got-it-done-before-monday", "We got it done before Monday", "2023-07-20", "before Monday", "2023-07-17"),
    # proposals and questions about meeting point forward (weak: a nearer past verb wins)
    ("can-you-call-thursday", "Can you call me Thursday?", "2023-07-17", "Thursday", "2023-07-20"),
    ("shall-we-meet-wednesday", "Shall we meet on Wednesday?", "2023-07-21", "on Wednesday", "2023-07-26"),
    ("could-you-check-what-broke", "Could you check what broke on Monday?", "2023-07-20", "on Monday",
     "2023-07-17"),
    # N weeks: the day, like N days
    ("3-weeks-ago-day", "It failed 3 weeks ago", "2023-07-20", "3 weeks ago", "2023-06-29"),
    ("a-week-ago-leap", "a week ago", "2024-03-05", "a week ago", "2024-02-27"),
    # a year word that qualifies the month is part of it
    ("march-last-year", "We launched in March last year", "2024-05-08", "March last year", "2023-03"),
    ("march-last-year-no-bare-year", "We launched in March last year", "2024-05-08", "last year", None),
    ("may-of-next-year", "The lease ends in May of next year", "2023-07-20", "May of next year", "2024-05"),
    # an ordinal before a noun is not a day of the month
    ("2nd-exit-no-mention", "Take the 2nd exit", "2023-07-20", "the 2nd", None),
    ("3rd-floor-no-mention", "She lives on the 3rd floor", "2023-07-20", "the 3rd", None),
    ("4th-attempt-no-mention", "It worked on the 4th attempt", "2023-07-20", "the 4th", None),
    ("1st-place-no-mention", "The 1st place went to Ana", "2023-07-20", "The 1st", None),
    ("5th-at-noon-is-a-date", "We will meet on the 5th at noon", "2023-07-28", "the 5th", "2023-08-05"),
    # "end of" / "start of" a period: its last / first day
    ("by-end-of-q3", "by end of Q3", "2024-02-05", "end of Q3", "2024-09-30"),
    ("until-the-end-of-the-month", "The contract runs until the end of the month", "2023-07-20",
     "end of the month", "2023-07-31"),
    ("signed-at-the-start-of-march", "We signed the deal at the start of March", "2023-11-20", "start of March",
     "2023-03-01"),
    ("due-by-the-end-of-2025", "The budget is due by the end of 2025", "2025-02-01", "end of 2025", "2025-12-31"),
    # a clock time narrows the day phrase it is attached to
    ("tomorrow-at-9am", "Call me tomorrow at 9am", "2023-07-20", "tomorrow at 9am", "2023-07-21T09"),
    ("at-2pm-yesterday", "The outage began at 2pm yesterday", "2023-07-20", "at 2pm yesterday", "2023-07-19T14"),
    ("friday-at-10am", "I'll see you Friday at 10am", "2023-07-18", "Friday at 10am", "2023-07-21T10"),
    ("deploy-is-at-4pm", "The deploy is at 4pm", "2023-07-20", "at 4pm", "2023-07-20T16"),
    # a weekday inside a capitalised name is not a date
    ("sunday-times-no-mention", "I read it in the Sunday Times", "2023-07-20", "Sunday", None),
    ("super-tuesday-no-mention", "We watched the Super Tuesday results", "2023-07-20", "Tuesday", None),
    ("monday-night-football-no-mention", "Monday Night Football starts soon", "2023-07-20", "Monday", None),
    ("on-monday-before-a-name", "On Monday Alice left", "2023-07-20", "On Monday", "2023-07-17"),
    # no mention
    ("no-mention-plain-words", "I have 5 kids and may go swimming", "2023-05-08", "may", None),
    ("no-mention-march-verb", "They march on", "2023-05-08", "march", None),
]

ZH: list[tuple[str, str, str, str, str | None]] = [
    ("zh-see-you-oct12", "我们10月12日见", "2023-05-08", "10月12日", "2023-10-12"),
    ("zh-last-tuesday", "上周二去了北京", "2023-05-08", "上周二", "2023-05-02"),
    ("zh-3-days-ago", "三天前", "2023-05-08", "三天前", "2023-05-05"),
    ("zh-last-year", "去年", "2023-05-08", "去年", "2022"),
    ("zh-year-month", "2021年3月", "2023-05-08", "2021年3月", "2021-03"),
    ("zh-will-join-jan15", "我将在1月15日入职", "2023-12-20", "1月15日", "2024-01-15"),
    ("zh-joined-jan15", "我1月15日入职了", "2023-12-20", "1月15日", "2023-01-15"),
    ("zh-last-day-is-jan31", "她的最后一天是1月31日", "2024-01-10", "1月31日", "2024-01-31"),
    ("zh-will-move-in-march", "我们会在3月搬家", "2023-12-15", "3月", "2024-03"),
    ("zh-moved-in-march", "我们3月搬了家", "2023-12-15", "3月", "2023-03"),
    ("zh-meeting-in-feb-no-cue", "2月的预算会议", "2023-12-15", "2月", "2024-02"),
    ("zh-plan-next-monday", "我们打算下周一开始", "2023-07-20", "下周一", "2023-07-24"),
    ("zh-before-friday", "周五之前交报告", "2023-07-18", "周五", "2023-07-21"),
    ("zh-been-on-friday", "周五我们去过那家店", "2023-07-18", "周五", "2023-07-14"),
    ("zh-monday-meeting-ambiguous", "周一开会", "2023-07-20", "周一", "2023-07-17|2023-07-24"),
    ("zh-tomorrow-3pm", "明天下午3点开会", "2023-07-20", "明天下午3点", "2023-07-21T15"),
    ("zh-next-month", "下个月", "2023-12-15", "下个月", "2024-01"),
    ("zh-last-month", "上个月", "2024-01-10", "上个月", "2023-12"),
    ("zh-two-weeks-later", "两周后", "2023-07-20", "两周后", "2023-08-03"),
    ("zh-5-days-ago", "5天前", "2023-07-20", "5天前", "2023-07-15"),
    ("zh-next-year-on-new-years-eve", "明年", "2023-12-31", "明年", "2024"),
    ("zh-will-celebrate-dec25", "我们要在12月25日过圣诞节", "2024-01-05", "12月25日", "2024-12-25"),
    ("zh-celebrated-dec25", "12月25日我们过了圣诞节", "2024-01-05", "12月25日", "2023-12-25"),
    ("zh-cue-after-jan3", "我们1月3日将发布", "2023-12-28", "1月3日", "2024-01-03"),
    ("zh-december-last-year", "去年12月", "2024-03-10", "去年12月", "2023-12"),
    ("zh-already-done-in-march", "已经在3月完成了", "2023-12-15", "3月", "2023-03"),
    ("zh-next-week", "下周", "2023-07-20", "下周", "2023-07-24..2023-07-30"),
    ("zh-last-wednesday", "上星期三", "2023-07-20", "上星期三", "2023-07-12"),
    ("zh-day-after-tomorrow", "后天", "2023-07-20", "后天", "2023-07-22"),
    ("zh-explicit-date", "2024年5月3日会发布", "2023-05-08", "2024年5月3日", "2024-05-03"),
    # 大前天 / 大后天
    ("zh-three-days-before", "大前天", "2024-03-01", "大前天", "2024-02-27"),
    ("zh-three-days-after", "大后天见", "2023-07-20", "大后天", "2023-07-23"),
    ("zh-three-days-after-3pm", "大后天下午3点开会", "2023-07-20", "大后天下午3点", "2023-07-23T15"),
    # seasons, with the year word that qualifies them
    ("zh-last-summer", "去年夏天我们去了海边", "2024-01-10", "去年夏天", "2023-06..2023-08"),
    ("zh-this-autumn", "今年秋天", "2023-05-08", "今年秋天", "2023-09..2023-11"),
    ("zh-winter-2022", "2022年冬天", "2023-05-08", "2022年冬天", "2022-12..2023-02"),
    # weekends: that calendar week's Saturday and Sunday
    ("zh-next-weekend", "下周末去爬山", "2023-07-20", "下周末", "2023-07-29..2023-07-30"),
    ("zh-this-weekend-said-monday", "本周末加班", "2023-07-17", "本周末", "2023-07-22..2023-07-23"),
    ("zh-last-weekend", "上个周末", "2023-07-20", "上个周末", "2023-07-15..2023-07-16"),
    ("zh-bare-weekend-past", "周末去爬山了", "2023-07-19", "周末", "2023-07-15..2023-07-16"),
    # N weeks: the day
    ("zh-three-weeks-ago", "三周前上线的", "2024-01-10", "三周前", "2023-12-20"),
    ("zh-one-week-later", "一周后见", "2023-12-28", "一周后", "2024-01-04"),
    # a year word that qualifies the month (or day) is part of it, never a mention of its own
    ("zh-last-october", "去年十月他入职了", "2024-03-10", "去年十月", "2023-10"),
    ("zh-last-october-no-bare-year", "去年十月他入职了", "2024-03-10", "去年", None),
    ("zh-next-year-mar5", "明年3月5日发布", "2023-05-08", "明年3月5日", "2024-03-05"),
    ("zh-august-two-years-ago", "前年八月", "2024-01-10", "前年八月", "2022-08"),
    ("zh-this-year-december", "今年12月", "2024-01-05", "今年12月", "2024-12"),
    # 会 after 的 is "meeting", not "will": no cue
    ("zh-monday-meeting-noun", "周一的会", "2023-07-20", "周一", "2023-07-17|2023-07-24"),
    ("zh-sunday-meeting-noun", "周日的会", "2023-07-19", "周日", "2023-07-16|2023-07-23"),
    ("zh-tuesday-meeting-huiyi", "周二的会议", "2023-07-21", "周二", "2023-07-18|2023-07-25"),
    ("zh-wednesday-meeting-i-will-go", "周三的会我会去", "2023-07-17", "周三", "2023-07-19"),
    # quarters
    ("zh-q4-2023", "2023年第四季度", "2024-01-10", "2023年第四季度", "2023-10..2023-12"),
    ("zh-next-year-q1", "明年第一季度上线", "2023-11-20", "明年第一季度", "2024-01..2024-03"),
    ("zh-q2-this-quarter", "第二季度的目标", "2023-05-08", "第二季度", "2023-04..2023-06"),
]


def _bound(text: str, last: bool) -> _dt.datetime:
    """The start of a written period, or (``last``) the end of it."""
    if "T" in text:
        day, hour = text.split("T")
        s = _dt.datetime.fromisoformat(day).replace(hour=int(hour), tzinfo=UTC)
        return s + _dt.timedelta(hours=1) if last else s
    parts = [int(p) for p in text.split("-")]
    if len(parts) == 3:
        s = _dt.datetime(*parts, tzinfo=UTC)
        return s + _dt.timedelta(days=1) if last else s
    if len(parts) == 2:
        y, m = parts
        if not last:
            return _dt.datetime(y, m, 1, tzinfo=UTC)
        return _dt.datetime(y + m // 12, m % 12 + 1, 1, tzinfo=UTC)
    return _dt.datetime(parts[0] + (1 if last else 0), 1, 1, tzinfo=UTC)


def _span(text: str) -> tuple[_dt.datetime, _dt.datetime]:
    first, _, last = text.partition("..")
    return _bound(first, False), _bound(last or first, True)


def _said(text: str) -> _dt.datetime:
    # mid-morning, so that no row depends on the hour the words were said
    return _dt.datetime.fromisoformat(text).replace(hour=10, tzinfo=UTC)


@pytest.mark.parametrize("text,said,phrase,expected", [pytest.param(*r[1:], id=r[0]) for r in EN + ZH])
def test_mention_table(text: str, said: str, phrase: str, expected: str | None) -> None:
    got = [m for m in resolve_mentions(text, _said(said)) if m.phrase.lower() == phrase.lower()]
    if expected is None:
        assert got == []
        return
    assert len(got) == 1, resolve_mentions(text, _said(said))
    m: TimeMention = got[0]
    want = [_span(s) for s in expected.split("|")]
    if len(want) == 1:
        assert m.certain and (m.start, m.end) == want[0]
    else:
        assert not m.certain and sorted(m.spans()) == sorted(want)


def test_table_size() -> None:
    assert len(EN) >= 60 and len(ZH) >= 20
    assert len({r[0] for r in EN + ZH}) == len(EN) + len(ZH)  # readable ids stay unique
