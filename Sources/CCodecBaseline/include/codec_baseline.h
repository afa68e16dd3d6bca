#ifndef CCODECBASELINE_H
#define CCODECBASELINE_H
int mp_baseline_placeholder(void);
#endif
