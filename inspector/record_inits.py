"""The `__init__` code of record shapes (`inspector.recordtype`): fields n0, n1... set from parameters a0, a1...,
then `__post_init__` where the name says so. Compiled with the package, so a run reads them from the .pyc instead of
compiling each shape it makes (about 0.06 ms a compile). Written by `python -m inspector.recordtype`;
tests/test_speed.py checks it is current and that each function's code is the compiled template's."""


def init_0(self):
    pass


def init_0_post(self):
    self.__post_init__()


def init_1(self, a0):
    self.n0 = a0


def init_1_post(self, a0):
    self.n0 = a0
    self.__post_init__()


def init_2(self, a0, a1):
    self.n0 = a0
    self.n1 = a1


def init_2_post(self, a0, a1):
    self.n0 = a0
    self.n1 = a1
    self.__post_init__()


def init_3(self, a0, a1, a2):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2


def init_3_post(self, a0, a1, a2):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.__post_init__()


def init_4(self, a0, a1, a2, a3):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3


def init_4_post(self, a0, a1, a2, a3):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.__post_init__()


def init_5(self, a0, a1, a2, a3, a4):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4


def init_5_post(self, a0, a1, a2, a3, a4):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.__post_init__()


def init_6(self, a0, a1, a2, a3, a4, a5):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5


def init_6_post(self, a0, a1, a2, a3, a4, a5):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.__post_init__()


def init_7(self, a0, a1, a2, a3, a4, a5, a6):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6


def init_7_post(self, a0, a1, a2, a3, a4, a5, a6):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.__post_init__()


def init_8(self, a0, a1, a2, a3, a4, a5, a6, a7):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7


def init_8_post(self, a0, a1, a2, a3, a4, a5, a6, a7):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.__post_init__()


def init_9(self, a0, a1, a2, a3, a4, a5, a6, a7, a8):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8


def init_9_post(self, a0, a1, a2, a3, a4, a5, a6, a7, a8):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.__post_init__()


def init_10(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9


def init_10_post(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.__post_init__()


def init_11(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10


def init_11_post(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.__post_init__()


def init_12(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11


def init_12_post(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.__post_init__()


def init_13(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.n12 = a12


def init_13_post(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.n12 = a12
    self.__post_init__()


def init_14(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.n12 = a12
    self.n13 = a13


def init_14_post(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.n12 = a12
    self.n13 = a13
    self.__post_init__()


def init_15(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.n12 = a12
    self.n13 = a13
    self.n14 = a14


def init_15_post(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.n12 = a12
    self.n13 = a13
    self.n14 = a14
    self.__post_init__()


def init_16(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.n12 = a12
    self.n13 = a13
    self.n14 = a14
    self.n15 = a15


def init_16_post(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15):
    self.n0 = a0
    self.n1 = a1
    self.n2 = a2
    self.n3 = a3
    self.n4 = a4
    self.n5 = a5
    self.n6 = a6
    self.n7 = a7
    self.n8 = a8
    self.n9 = a9
    self.n10 = a10
    self.n11 = a11
    self.n12 = a12
    self.n13 = a13
    self.n14 = a14
    self.n15 = a15
    self.__post_init__()
