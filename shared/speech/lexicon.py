"""The words behind the statement rules (:mod:`shared.speech.rules`) and the checks a rule's object must
pass: canonical names of pets, people and categories in both languages (猫 and cat are ``cat``), jobs,
words that are not places, origins or possessions, and the topic key of a liked thing. Pure, no database.
"""

from __future__ import annotations

import re

from shared.search.kinds import expanded  # noqa: F401  (re-exported: the answers' general words)
from shared.search.tokenizer import keywords


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CANONICAL_TABLE = """
dog: 狗 小狗 狗狗 柯基 泰迪 哈士奇 金毛 柴犬 拉布拉多 dog puppy doggo retriever labrador beagle poodle terrier husky
     corgi shepherd bulldog pug chihuahua dachshund
cat: 猫 猫咪 小猫 cat kitten kitty
rabbit: 兔子 rabbit bunny
hamster: 仓鼠 hamster
parrot: 鹦鹉 parrot
fish: 鱼 金鱼 fish
turtle: 乌龟 turtle tortoise
girlfriend: 女朋友 girlfriend gf
boyfriend: 男朋友 boyfriend bf
wife: 老婆 妻子 太太 wife
husband: 老公 丈夫 husband
mother: 妈妈 母亲 mom mum mother mommy
father: 爸爸 父亲 dad father daddy
son: 儿子 son
daughter: 女儿 daughter
brother: 哥哥 弟弟 brother
sister: 姐姐 妹妹 sister
roommate: 室友 roommate flatmate
colleague: 同事 colleague coworker
boss: 老板 boss
best_friend: 闺蜜 好朋友 best_friend bestie
baby: 宝宝 baby
child: 孩子 kid child
fruit: 水果 fruit
colour: 颜色 color colour
food: 食物 菜 food dish
movie: 电影 movie film
singer: 歌手 singer
song: 歌 歌曲 song
sport: 运动 sport
book: 书 book
animal: 动物 animal
drink: 饮料 drink
city: 城市 city
season: 季节 season
game: 游戏 game
band: 乐队 band
author: 作家 author writer
actor: 演员 actor actress
flower: 花 flower
dessert: 甜点 dessert
music: 音乐 music
tv_show: 电视剧 show tv_show
team: 球队 team
number: 数字 number
dream: 梦想 dream
goal: 目标 goal
star_sign: 星座 star_sign zodiac_sign
blood_type: 血型 blood_type
idol: 偶像 idol
motto: 座右铭 motto
from: hometown
"""
_TABLE_ROW = re.compile(r"^(\w+):((?:.|\n\s)+)$", re.MULTILINE)
"""A row of the table above: its canonical name, and its words (on indented continuation lines too)."""
_HAN_CHAR = re.compile(r"[\u4e00-\u9fff]")
CANONICAL_THINGS: dict[str, str] = {
    word.replace("_", " "): canonical
    for canonical, words in _TABLE_ROW.findall(_CANONICAL_TABLE)
    for word in words.split()
}
"""Pets, people and categories in both languages, under one canonical name each."""
_BOTH_IN_CHINESE = {"sister": "姐妹", "brother": "兄弟", "best_friend": "好朋友"}
"""Canonical names whose first Chinese word says more than they do (姐姐 is only an older sister)."""
CHINESE_NAMES: dict[str, str] = {
    **{canonical: next(word for word in words.split() if _HAN_CHAR.search(word))
       for canonical, words in _TABLE_ROW.findall(_CANONICAL_TABLE)
       if _HAN_CHAR.search(words)},
    **_BOTH_IN_CHINESE,
}
"""What a canonical name is called in Chinese (cat → 猫), for showing a key to a Chinese reader."""
PEOPLE = _words("girlfriend boyfriend wife husband mother father son daughter brother sister roommate colleague boss "
                "best_friend baby child")

JOBS_ZH = re.compile(
    r"(?:师|员|生|工|手|官|长|医生|护士|司机|律师|记者|会计|作家|画家|专家|科学家|老板|主播|博主|销售|演员|"
    r"歌手|警察|军人|农民|模特|保安|店主|秘书|编辑|翻译|客服|经理|总监|主管|教授|博士|码农|程序猿|"
    r"自由职业者|全职妈妈|家庭主妇|创业者|上班族|打工人)$")
JOBS_EN = _words("""
    nurse chef doctor dentist lawyer teacher student engineer developer programmer designer artist writer clerk cook
    pilot vet barista cashier farmer scientist researcher professor manager consultant accountant analyst architect
    electrician plumber firefighter officer soldier surgeon therapist counselor counsellor pharmacist intern freelancer
    entrepreneur coach tutor mechanic driver photographer musician actor actress editor journalist librarian secretary
    paramedic caregiver carer retiree ceo cto cfo waiter waitress bartender baker butcher carpenter painter sales
    salesman police policeman detective judge banker trader economist translator interpreter mathematician physicist
    chemist biologist psychologist veterinarian technician administrator receptionist janitor cleaner housewife
    homemaker streamer youtuber blogger influencer model dancer singer composer producer director professional
    specialist assistant instructor""")
_JOB_SUFFIX = re.compile(r"(?:ist|ian|eer)$")
NOT_PLACES = _words("院 院了 哪 哪里 哪儿 一起 这里 那里 这儿 那儿 家里 附近 一块")
NOT_ORIGINS = _words("""
    好 坏 男 女 大 小 老 年轻 成年 一个 个 普通 穷 富 有钱 懒 笨 聪明 怪 真 机器 外星 文化 明白 讲理 老实 善良 内向 外向
    同一 一类 局外 过来 中年 老年 病 家 主 客 路 凡 超 废""")
ABSTRACT_POSSESSIONS = _words("""
    问题 想法 事 事情 计划 会 梦 感觉 办法 主意 消息 好消息 坏消息 约会 考试 面试
    question idea problem feeling lot bit meeting appointment exam test class date headache cold fever moment minute
    second few couple time chance plan dream day week suggestion favor favour doubt job interview call point thing way
    deadline presentation party trip shift crush issue request""")
"""Things one "has" that are not possessions worth remembering ("I have a question", "我有一个问题")."""
_IE_PLURALS = _words("movies cookies zombies selfies rookies hippies pies ties lies brownies smoothies goalies "
                     "aussies techies foodies indies")
NOT_INTRODUCTIONS = _words("""
    Ok Okay Fine Good Great Back Here Home Sorry Sure Done Ready Busy Tired Happy Sad Bored Hungry Alright Alive Awake
    Single Married Retired Free Late English Chinese American British Canadian Australian German French Italian Spanish
    Japanese Korean Indian Irish Scottish Welsh Mexican Brazilian Russian Dutch Swedish Polish Turkish Greek Vietnamese
    Thai Filipino Christian Muslim Jewish Buddhist Catholic Gay Straight Bi Trans Vegan Vegetarian Not So Very Just
    Still Also Really""")
"""Capitalised words after "I'm" that are not a name."""
_NOT_LIKED = re.compile(
    r"^(?:this|that|these|those|it|its|it's|how|when|what|where|why|who|whom|his|her|their|them|him|the way|"
    r"the idea|the thought|the fact|the look|the colou?r|seeing|hearing|watching you|to help|to hear|"
    r"这|那|它|上你|上他|上她)|\byour?\b|你", re.IGNORECASE)
"""What is liked is somebody else's thing or a remark, not a taste of the speaker ("I love your turtles")."""
_EVENT_TIME = re.compile(r"\b(?:tomorrow|tonight|today|next|this (?:week|weekend|month|year)|later|soon|upcoming|"
                         r"coming up)\b|明天|今晚|下周|下个月|待会|马上", re.IGNORECASE)
_ZH_ACTIVITY_VERB = re.compile(r"^(?:吃|喝|玩|看|听|打|去|做|养|学|弹|画|踢|逛|唱|跳|读|写)(?=.)")
"""The verb before a Chinese topic (吃火锅 → 火锅), when something follows it."""
_EN_LEADING_WORD = re.compile(r"^(?:to|the|a|an|my|some|playing|watching|reading|eating|drinking)\s+", re.IGNORECASE)
_POSSESSION_CUT = re.compile(r"\s+(?:that|which|who|to|from|for|with|in|at|on|and)\b.*$", re.IGNORECASE)
_NAME_BLOCKERS = re.compile(r"[我你他她它]|什么|啥|谁|哪|^(?:了|过|着)|\b(?:you|me|him|her|it|them|what|who)\b",
                            re.IGNORECASE)


def canonical_thing(thing: str) -> str:
    """The shared name of a pet, person or category in either language (猫 and cat → cat)."""
    text = " ".join(thing.strip().lower().split())
    if text in CANONICAL_THINGS:
        return CANONICAL_THINGS[text]
    words = text.split()
    for candidate in (words[-1] if words else "", _singular(words[-1]) if words else ""):
        if candidate in CANONICAL_THINGS:
            return CANONICAL_THINGS[candidate]
    for size in range(min(len(text), 4), 0, -1):  # Chinese: the head noun at the end (小白狗 → 狗)
        if text[-size:] in CANONICAL_THINGS:
            return CANONICAL_THINGS[text[-size:]]
    if text.isascii() and words:
        return _singular(words[-1])
    head_words = keywords(text)
    return head_words[-1] if head_words else text[:20]


def possession_head(obj: str) -> str:
    """What is owned, without what is said about it ("a collection of books that take me there" → "a collection
    of books")."""
    return _POSSESSION_CUT.sub("", obj.strip()).strip()


def topic_key(obj: str) -> str | None:
    """The object's first one or two keywords, singular ("horror movies" → horror_movie, "吃火锅" → 火锅)."""
    stripped = _ZH_ACTIVITY_VERB.sub("", obj.strip())
    stripped = _EN_LEADING_WORD.sub("", stripped)
    words = keywords(stripped) or keywords(obj)
    if not words:
        return None
    return "_".join(_singular(word) for word in words[:2])[:60]


def plausible(check: str, obj: str) -> bool:
    """Whether ``obj`` can be what the rule says it is (a name, a job, a place …)."""
    if not obj or len(obj) > 60:
        return False
    if check == "name":
        capitalised = not obj.isascii() or obj[:1].isupper()
        return not _NAME_BLOCKERS.search(obj) and len(obj.split()) <= 3 and capitalised
    if check == "introduced":
        return obj not in NOT_INTRODUCTIONS
    if check == "job_zh":
        return bool(JOBS_ZH.search(obj)) and obj not in {"学生会", "大家", "人家"}
    if check == "job_en":
        last = _singular(obj.lower().split()[-1])
        return last in JOBS_EN or bool(_JOB_SUFFIX.search(last))
    if check == "place":
        return obj not in NOT_PLACES and not _NAME_BLOCKERS.search(obj)
    if check == "origin":
        return obj not in NOT_ORIGINS and not obj.endswith("的")
    if check == "has":
        head = possession_head(obj)
        owned = {_singular(word) for word in keywords(head)}
        return bool(head) and not _EVENT_TIME.search(obj) and not owned & ABSTRACT_POSSESSIONS
    if check == "liking":
        return not _NOT_LIKED.search(obj)
    return True


def _singular(word: str) -> str:
    if not word.isascii() or len(word) <= 3 or word.endswith("ss"):
        return word
    if word.endswith("ies") and word not in _IE_PLURALS:
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") else word
