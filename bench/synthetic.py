"""What the scale benchmark's synthetic users talk about, and how unevenly they talk: shared by its memories
(:mod:`bench.scale`) and its rounds (:mod:`bench.scale_rounds`)."""

from __future__ import annotations

import sys

USER_SKEW = 1.5
"""Users are drawn as ``users * random() ** USER_SKEW``: a few heavy users, a long light tail."""
MAX_AGE_DAYS = 365

VOCABULARY = {
    "food": ["pasta", "sushi", "ramen", "curry", "dumplings", "tacos",
             "pizza", "salad", "risotto", "pho", "kimchi", "falafel", "paella"],
    "drink": ["coffee", "matcha", "oolong", "espresso", "lemonade", "cider", "kombucha", "chai"],
    "activity": ["hiking", "cycling", "swimming", "climbing", "running",
                 "yoga", "painting", "gardening", "fishing", "skating"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"],
    "city": ["Berlin", "Lisbon", "Toronto", "Osaka", "Seattle", "Melbourne", "Dublin", "Prague", "Austin", "Kyoto"],
    "job": ["nurse", "architect", "teacher", "plumber", "designer",
            "accountant", "chef", "pilot", "librarian", "engineer"],
    "pet": ["cat", "dog", "parrot", "rabbit", "hamster", "tortoise"],
    "name": ["Alice", "Bruno", "Chen", "Dmitri", "Elena", "Farah", "Gustav",
             "Hana", "Ivan", "Julia", "Kenji", "Leila", "Marco", "Nadia", "Omar"],
    "skill": ["piano", "Spanish", "calligraphy", "woodworking", "photography", "chess", "guitar", "Japanese"],
    "relation": ["sister", "brother", "cousin", "colleague", "neighbour", "mother", "father", "friend"],
    "食物": ["火锅", "饺子", "小笼包", "烤鸭", "麻婆豆腐", "牛肉面", "寿司", "披萨", "糖醋排骨", "煎饼"],
    "饮料": ["乌龙茶", "绿茶", "咖啡", "奶茶", "豆浆", "果汁", "红酒"],
    "活动": ["爬山", "游泳", "跑步", "骑车", "钓鱼", "看电影", "打篮球", "练瑜伽", "逛公园"],
    "城市": ["北京", "上海", "杭州", "成都", "广州", "西安", "南京", "厦门", "重庆", "苏州"],
    "职业": ["医生", "老师", "程序员", "设计师", "会计", "厨师", "律师", "记者"],
    "宠物": ["猫", "小狗", "兔子", "鹦鹉", "金鱼", "乌龟"],
    "名字": ["小王", "小李", "张伟", "王芳", "李娜", "刘洋", "陈静", "赵磊", "周敏", "孙浩"],
    "技能": ["钢琴", "书法", "英语", "日语", "摄影", "吉他", "围棋", "编程"],
    "亲属": ["妹妹", "哥哥", "表姐", "同事", "邻居", "妈妈", "爸爸", "朋友"],
    "星期": ["周一", "周二", "周三", "周四", "周五", "周六", "周日"],
}


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
