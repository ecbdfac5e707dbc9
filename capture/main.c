#include <stdio.h>
int main(void){puts("x");return 0;}
